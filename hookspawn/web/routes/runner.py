"""The local runner's session routes: POST /sessions/{id}/cancel, GET /sessions/{id}/log and
GET /sessions/{id}/transcript."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from hookspawn.terminal_text import escape_controls, whole_characters
from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, errors
from hookspawn.web.http_errors import ApiError
from workers.runtime import Runtime
from workers.session.records import StoredSession
from workers.session.run_record import SessionRun
from workers.session.runner.logs import read_log, read_transcript, tail
from workers.session.runs import ACTIVE
from workers.session.status import SessionStatus

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN))

#: at most this much of the log per GET /sessions/{id}/log
LOG_CHUNK = 256 * 1024


class CancelAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    status: str


def settled(rt: Runtime, session: StoredSession) -> StoredSession:
    """`session` as it stands once a run whose runner stopped renewing its lease is failed
    (`runner_lost`): reading a session settles it, so none is left `running` for want of a
    runner to sweep."""
    if session.status in ACTIVE and rt.runs.settle(session.id):
        return replace(session, run=rt.runs.get(session.id) or session.run)
    return session


def log_tail(rt: Runtime, session: StoredSession) -> str | None:
    """The end of the session's log ('' before it has one); None when no local runner runs
    it."""
    if session.run is None:
        return None
    return tail(rt.settings.data_dir, session.id) or ""


def _known(rt: Runtime, session_id: str) -> None:
    if not rt.sessions.exists(session_id):
        raise ApiError("session_not_found", f"no session {session_id!r}")


@router.post(
    "/sessions/{session_id}/cancel",
    response_model=CancelAnswer,
    responses=errors(
        STORE,
        {
            404: "session_not_found: no session has this id",
            409: "not_cancellable: the session is not run by a local runner, or has ended",
        },
    ),
)
async def cancel(request: Request, session_id: str) -> dict[str, Any]:
    """Stop a session: a queued one ends `cancelled` at once; a staging, setting-up or running
    one is stopped by its runner (the running command's process group is killed)."""
    status = await run_in_threadpool(cancel_session, runtime(request), session_id)
    return {"id": session_id, "status": status}


def cancel_session(rt: Runtime, session_id: str) -> str:
    """Ask the session's runner to cancel it (the API's route and /ui's button); its status
    now, or the refusal."""
    _known(rt, session_id)
    status = rt.runs.cancel(session_id)
    if status is None:
        raise ApiError(
            "not_cancellable",
            f"session {session_id!r} is not run by a local runner (HOOKSPAWN_RUNNER=local)",
        )
    if status in (SessionStatus.SUCCEEDED, SessionStatus.FAILED):
        raise ApiError(
            "not_cancellable",
            f"session {session_id!r} has already ended ({status})",
            sessionStatus=status,
        )
    return status


@router.get(
    "/sessions/{session_id}/log",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "the log from `offset`"},
        **errors(STORE, {404: "session_not_found: no session has this id"}),
    },
)
async def session_log(
    request: Request,
    session_id: str,
    offset: int = Query(0, ge=0),
    raw: bool = Query(False, description="the log's bytes as written, control characters too"),
) -> Response:
    """The session's log from byte `offset`, each control character but newline and tab
    written as its escape (`\\r`, `\\x1b`: what session commands printed cannot move a
    terminal's cursor or recolour it), or with `raw` the bytes as they are; `X-Log-Offset` is
    where the next read starts (a byte offset into the log) and `X-Session-Status` the
    session's status (absent when no local runner runs it)."""
    rt = runtime(request)

    def read() -> tuple[bytes, int, str | None]:
        _known(rt, session_id)
        data, end = read_log(rt.settings.data_dir, session_id, offset, LOG_CHUNK)
        run = rt.runs.get(session_id)
        return data, end, run.status.value if run else None

    data, end, status = await run_in_threadpool(read)
    if not raw:
        whole = whole_characters(data)  # a character cut at the chunk's end: the next read's
        end -= len(data) - len(whole)
        data = escape_controls(whole.decode(errors="replace")).encode()
    headers = {"X-Log-Offset": str(end)}
    if status:
        headers["X-Session-Status"] = status
    return Response(data, media_type="text/plain; charset=utf-8", headers=headers)


#: at most this much of the transcript per GET /sessions/{id}/transcript (whole lines)
TRANSCRIPT_CHUNK = 1024 * 1024


@router.get(
    "/sessions/{session_id}/transcript",
    response_class=Response,
    responses={
        200: {
            "content": {"application/x-ndjson": {}},
            "description": "the harness's events from `offset`, one JSON object a line",
        },
        **errors(
            STORE,
            {
                404: "session_not_found: no session has this id; no_transcript: its harness "
                "has not run (yet), or ran as HOOKSPAWN_HARNESS_COMMAND"
            },
        ),
    },
)
async def session_transcript(
    request: Request, session_id: str, offset: int = Query(0, ge=0)
) -> Response:
    """The raw JSON events the session's harness printed, from byte `offset` (whole lines);
    `X-Transcript-Offset` is where the next read starts, `X-Harness` the harness that printed
    them and `X-Session-Status` the session's status. The model key and the session credential
    never appear in it (each is replaced by `[redacted]`)."""
    rt = runtime(request)

    def read() -> tuple[bytes, int, SessionRun | None]:
        _known(rt, session_id)
        found = read_transcript(rt.settings.data_dir, session_id, offset, TRANSCRIPT_CHUNK)
        if found is None:
            raise ApiError(
                "no_transcript",
                f"session {session_id!r} has no transcript: its harness has not run (yet), "
                "or it ran HOOKSPAWN_HARNESS_COMMAND, whose output is in the log",
            )
        return *found, rt.runs.get(session_id)

    data, end, run = await run_in_threadpool(read)
    headers = {"X-Transcript-Offset": str(end)}
    if run is not None:
        headers["X-Session-Status"] = run.status.value
        if run.harness is not None:
            headers["X-Harness"] = run.harness.name
    return Response(data, media_type="application/x-ndjson", headers=headers)
