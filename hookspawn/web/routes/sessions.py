"""Sessions and starts: GET /sessions[/{id}], POST /agents/{name}/sessions, POST …/spawn."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, UNPARSEABLE, errors
from hookspawn.web.http_errors import ApiError, StartRefused
from hookspawn.web.routes.models import JsonSchemaDocument, SessionList, SessionRef, SessionView
from hookspawn.web.routes.runner import log_tail, settled
from triggers.outcome import Outcome
from triggers.session.spec import SessionSpec, session_json_schema
from workers import metrics
from workers.delivery.pipeline import SpawnPipeline
from workers.delivery.starts import StartRequest, start_from_agent, start_manual
from workers.runtime import Runtime
from workers.session.status import SessionStatus

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN))

#: what a start answers: 201 with the session, or the refusal with its status
STARTED: dict[int | str, dict[str, Any]] = {
    201: {
        "model": SessionSpec | SessionRef,
        "description": "the session (only its id when the session store does not hold it)",
    },
    **errors(
        UNPARSEABLE,
        STORE,
        {
            403: "unauthorized_repository, repository_access_revoked or permission_not_granted",
            409: "event_required, spawn_depth_exceeded, or another refusal (details.outcome)",
            422: "unresolvable_ref, invalid_ref or unresolvable_text; idempotency_key_reused "
            "(this Idempotency-Key came before with a different body); or invalid_request: "
            "the request does not match this document (details.errors)",
            502: "the start failed (details.outcome: failed), e.g. the GitHub App's credentials "
            "were refused",
            503: "store_unavailable; github_unavailable or dispatch_failed after retries; "
            "starts_unavailable (this process has no spawn pipeline)",
        },
    ),
}


class StartBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    display_title: str | None = Field(None, alias="displayTitle", max_length=65536)
    initial_prompt: str | None = Field(None, alias="initialPrompt", max_length=65536)
    message: str | None = Field(None, max_length=65536)
    requester: str | None = Field(None, max_length=256)


class SpawnBody(StartBody):
    agent: str = Field(min_length=1, max_length=128)


def _spawner(rt: Runtime) -> SpawnPipeline:
    pipeline = rt.pipeline
    if not isinstance(pipeline, SpawnPipeline):
        raise ApiError("starts_unavailable", "this process has no spawn pipeline")
    return pipeline


def _answer(rt: Runtime, outcome: Outcome, origin: str) -> JSONResponse:
    # a start's outcome counts like a trigger's; a repeated Idempotency-Key as a repeat
    metrics.count_outcomes([outcome], origin=origin)
    if outcome.outcome == "dispatched" and outcome.session_id:
        session = rt.sessions.get(outcome.session_id)
        answer = session.spec_json() if session is not None else {"id": outcome.session_id}
        return JSONResponse(answer, status_code=201)
    code = outcome.code or "start_failed"
    raise StartRefused.of(outcome.outcome, code, outcome.message, dict(outcome.details))


def _request(body: StartBody | None, key: str | None) -> StartRequest:
    body = body or StartBody()
    return StartRequest(
        display_title=body.display_title,
        initial_prompt=body.initial_prompt,
        message=body.message,
        requester=body.requester,
        idempotency_key=key,
    )


@router.post(
    "/agents/{name}/sessions",
    status_code=201,
    responses={**STARTED, **errors({404: "agent_not_found: no compiled agent has this name"})},
)
async def start(
    request: Request,
    name: str,
    body: StartBody | None = None,
    idempotency_key: str | None = Header(None, max_length=256),
) -> JSONResponse:
    rt = runtime(request)
    outcome = await run_in_threadpool(
        start_manual, _spawner(rt), name, _request(body, idempotency_key)
    )
    return _answer(rt, outcome, "manual")


@router.post(
    "/sessions/{session_id}/spawn",
    status_code=201,
    responses={
        **STARTED,
        **errors({404: "session_not_found (the parent) or agent_not_found (the agent to start)"}),
    },
)
async def spawn(
    request: Request,
    session_id: str,
    body: SpawnBody,
    idempotency_key: str | None = Header(None, max_length=256),
) -> JSONResponse:
    rt = runtime(request)
    outcome = await run_in_threadpool(
        start_from_agent,
        _spawner(rt),
        rt.sessions,
        session_id,
        body.agent,
        _request(body, idempotency_key),
    )
    return _answer(rt, outcome, "agent")


@router.get(
    "/sessions",
    response_model=SessionList,
    response_model_exclude_unset=True,
    responses=errors(STORE),
)
async def list_sessions(
    request: Request,
    agent: str | None = None,
    status: Annotated[
        SessionStatus | None,
        Query(description="only sessions a local runner runs, with this status now"),
    ] = None,
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    rt = runtime(request)

    def load() -> list[dict[str, Any]]:
        # the status lives in the run record, not the session index: with a filter, a larger
        # window of the newest sessions is read, and `limit` of the matching ones kept
        window = limit if status is None else min(10 * limit, 10000)
        items = rt.sessions.list(agent=agent, limit=window, status=status)
        return [item.to_json() for item in items[:limit]]

    return {"items": await run_in_threadpool(load)}


@router.get(
    "/sessions/{session_id}",
    response_model=SessionView,
    response_model_exclude_unset=True,
    responses=errors(STORE, {404: "session_not_found: no session has this id"}),
)
async def get_session(request: Request, session_id: str) -> dict[str, Any]:
    rt = runtime(request)

    def load() -> dict[str, Any]:
        found = rt.sessions.get(session_id)
        if found is None:
            raise ApiError("session_not_found", f"no session {session_id!r}")
        session = settled(rt, found)
        logged = log_tail(rt, session)
        return {
            **session.to_json(),
            "audit": rt.audit.entries(session_id),
            "failedAuthentications": rt.audit.failures(session_id),
            **({"logTail": logged} if logged is not None else {}),
        }

    return await run_in_threadpool(load)


@router.get(
    "/schemas/session.json", response_model=JsonSchemaDocument, response_model_exclude_unset=True
)
async def session_schema() -> dict[str, Any]:
    return session_json_schema()
