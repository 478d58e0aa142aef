"""The delivery explorer at /ui: server-rendered pages (jinja2, no JavaScript) and their sign-in."""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, quote

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import ChainableUndefined, Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import LOGIN_COOKIE, require_admin, runtime, same_origin
from hookspawn.web.http_errors import ApiError
from hookspawn.web.routes.deliveries import delivery_view
from hookspawn.web.routes.runner import cancel_session, log_tail, settled
from hookspawn.web.routes.session_outcomes import latest_outcomes
from hookspawn.web.ui import logins, overview
from triggers.session.harness_events import Step, timeline
from triggers.timestamps import parse_iso
from workers.delivery.outcome_words import delivery_words
from workers.delivery.pipeline import SpawnPipeline
from workers.runtime import Runtime
from workers.session.run_record import SessionRun
from workers.session.runner.logs import read_transcript
from workers.session.status import ACTIVE, SessionStatus

router = APIRouter(prefix="/ui", include_in_schema=False)

#: a delivery body larger than this is shown cut, as stored (not re-indented)
BODY_SHOWN = 256 * 1024
STATUSES = ("queued", "processed", "failed")
#: the sign-in form (a token and a path) is at most this many bytes, URL-encoded
LOGIN_FORM_BYTES = 4096

_HEADERS = {
    # no script may run on these pages, whatever a payload smuggles into them
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _when(value: Any) -> str:
    """A datetime, or an ISO 8601 time (`2024-05-01T12:34:56.789Z`), as `2024-05-01 12:34:56`
    in UTC; any other text as it is."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    if not isinstance(value, str) or not value:
        return ""
    try:
        return parse_iso(value).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return value


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


_templates = Environment(
    loader=PackageLoader("hookspawn.web.ui", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=ChainableUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_templates.filters["when"] = _when
_templates.filters["pretty"] = _pretty
_templates.filters["segment"] = lambda value: quote(str(value), safe="")


def _counted(n: object, one: str, many: str | None = None) -> str:
    """`1 delivery`, `2 deliveries`: the noun agrees with the number."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


_templates.filters["counted"] = _counted


def _render(
    request: Request, template: str, context: Mapping[str, Any], *, status: int = 200
) -> HTMLResponse:
    rt = runtime(request)
    page = _templates.get_template(template).render(
        **context, token_required=bool(rt.settings.admin_token), path=request.url.path
    )
    return HTMLResponse(page, status_code=status, headers=_HEADERS)


def _signed_in(request: Request) -> bool:
    try:
        require_admin(request)
    except ApiError:
        return False
    return True


def _safe_next(value: str | None) -> str:
    """Only a path of this explorer: never another site (`//host`, `/\\host`)."""
    if not value or "\\" in value or any(ord(c) < 0x20 for c in value):
        return "/ui"
    if value == "/ui" or value.startswith(("/ui/", "/ui?")):
        return value
    return "/ui"


async def _page(
    request: Request, template: str, load: Callable[[Runtime], Mapping[str, Any]]
) -> Response:
    """Sign-in first when a token is required; then load (off the event loop) and render."""
    if not await run_in_threadpool(_signed_in, request):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/ui/login?next={quote(target, safe='')}", status_code=303)
    rt = runtime(request)
    try:
        context = await run_in_threadpool(load, rt)
    except ApiError as exc:
        if exc.status != 404:
            raise
        return _render(
            request, "not_found.html", {"title": "Not found", "message": exc.message}, status=404
        )
    return _render(request, template, context)


# sign-in ----------------------------------------------------------------------------------------
@router.get("/login")
async def login_form(request: Request, next: str | None = None) -> Response:
    if not runtime(request).settings.admin_token:
        return RedirectResponse(_safe_next(next), status_code=303)
    context = {"title": "Sign in", "next": _safe_next(next), "failed": False}
    return _render(request, "login.html", context)


async def _small_form(request: Request) -> dict[str, str]:
    """The sign-in form's fields: URL-encoded and at most LOGIN_FORM_BYTES, else refused unread.

    Starlette's `request.form()` would spool a multipart upload of any size to disk first.
    """
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise ApiError(
            "unsupported_content_type",
            f"/ui/login takes an application/x-www-form-urlencoded form, not {media or 'none'}",
        )
    too_large = ApiError(
        "payload_too_large",
        f"the /ui/login form is over {LOGIN_FORM_BYTES} bytes",
        limit=LOGIN_FORM_BYTES,
    )
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > LOGIN_FORM_BYTES):
        raise too_large
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > LOGIN_FORM_BYTES:
            raise too_large
    try:
        fields = parse_qs(raw.decode(), max_num_fields=8)
    except (UnicodeDecodeError, ValueError) as exc:
        message = f"the /ui/login form is not readable: {exc}"
        raise ApiError("invalid_request", message) from None
    return {name: values[0] for name, values in fields.items()}


@router.post("/login")
async def login(request: Request) -> Response:
    # no origin check: signing in takes the token itself, which a page elsewhere does not have
    token = runtime(request).settings.admin_token
    form = await _small_form(request)
    target = _safe_next(form.get("next"))
    if not token:
        return RedirectResponse(target, status_code=303)
    given = form.get("token")
    if given is not None and hmac.compare_digest(given.strip().encode(), token.encode()):
        login_id = await run_in_threadpool(logins.create, runtime(request).client, token)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            LOGIN_COOKIE,
            login_id,
            max_age=logins.SECONDS,
            path="/",
            httponly=True,
            samesite="lax",
            # https as the client connected: directly, or through a trusted proxy's
            # X-Forwarded-Proto (hookspawn/web/server/http_server.py)
            secure=request.url.scheme == "https",
        )
        return response
    context = {"title": "Sign in", "next": target, "failed": True}
    return _render(request, "login.html", context, status=401)


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End the login on the server too: the cookie is worthless from here on."""
    same_origin(request, required=False)
    login_id = request.cookies.get(LOGIN_COOKIE)
    if login_id:
        await run_in_threadpool(logins.revoke, runtime(request).client, login_id)
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(LOGIN_COOKIE, path="/", httponly=True, samesite="lax")
    return response


# pages ------------------------------------------------------------------------------------------
def _text_param(request: Request, name: str) -> str:
    return request.query_params.get(name, "").strip()[:200]


def _limit(request: Request) -> int:
    try:
        return max(1, min(1000, int(request.query_params.get("limit", "50"))))
    except ValueError:
        return 50


def _session_summary(outcomes: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(session status, failure code, how many) of the sessions a delivery's latest run
    dispatched that a local runner runs (their status is known), failures first."""
    counts = Counter(
        (str(o["sessionStatus"]), str(o.get("sessionFailure") or ""))
        for o in outcomes
        if o.get("outcome") == "dispatched" and o.get("sessionStatus")
    )
    return sorted(
        ((status, code, n) for (status, code), n in counts.items()),
        key=lambda row: (row[0] not in ("failed", "cancelled"), row[0], row[1]),
    )


@router.get("", include_in_schema=True, response_class=HTMLResponse)
async def overview_page(request: Request) -> Response:
    """The overview: deliveries over the last hour and day, queues, latency, sessions, failures.
    A filtered link of the deliveries list made when it was here still finds the list."""
    if request.url.query:
        return RedirectResponse(f"/ui/deliveries?{request.url.query}", status_code=303)
    return await _page(request, "overview.html", overview.gather)


@router.get("/deliveries", response_class=HTMLResponse)
async def deliveries(request: Request) -> Response:
    """The delivery explorer: recent deliveries, filtered by `event`, `status`, `repository`."""
    filters = {
        "event": _text_param(request, "event"),
        "status": _text_param(request, "status"),
        "repository": _text_param(request, "repository"),
    }
    limit = _limit(request)

    def load(rt: Runtime) -> dict[str, Any]:
        found = rt.store.recent(
            event=filters["event"] or None,
            status=filters["status"] or None,
            repository=filters["repository"] or None,
            limit=limit,
        )
        latest = latest_outcomes(rt, [delivery.delivery_id for delivery in found])
        rows = [
            {
                **delivery.to_json(),
                "words": delivery_words(delivery.status, delivery.error, outcomes),
                "sessions": _session_summary(outcomes),
            }
            for delivery, outcomes in zip(found, latest, strict=True)
        ]
        return {
            "title": "Deliveries",
            "rows": rows,
            "filters": filters,
            "limit": limit,
            "statuses": STATUSES,
        }

    return await _page(request, "deliveries.html", load)


@router.get("/deliveries/{delivery_id}")
async def delivery(request: Request, delivery_id: str) -> Response:
    def load(rt: Runtime) -> dict[str, Any]:
        view = delivery_view(rt, delivery_id)
        words = delivery_words(view["status"], view.get("error"), view.get("outcomes") or [])
        decisions = [d for d in view["decisions"] if "agent" in d]
        notes = [n for d in view["decisions"] for n in d.get("connections", ())]
        body = rt.store.body(delivery_id) or b""
        if len(body) > BODY_SHOWN:
            shown = body[:BODY_SHOWN].decode("utf-8", "replace")
            cut = len(body)
        else:
            try:
                shown = _pretty(orjson.loads(body)) if body else ""
            except (orjson.JSONDecodeError, TypeError):
                # not JSON, or nested deeper than orjson writes (a record from before intake
                # limited the depth): shown as it was received
                shown = body.decode("utf-8", "replace")
            cut = 0
        return {
            "title": f"Delivery {delivery_id}",
            "d": view,
            "words": words,
            "decisions": decisions,
            "notes": notes,
            "body": shown,
            "body_size": cut,
        }

    return await _page(request, "delivery.html", load)


@router.get("/sessions")
async def sessions(request: Request) -> Response:
    agent = _text_param(request, "agent")
    limit = _limit(request)

    def load(rt: Runtime) -> dict[str, Any]:
        items = rt.sessions.list(agent=agent or None, limit=limit)
        return {"title": "Sessions", "items": items, "agent": agent, "limit": limit}

    return await _page(request, "sessions.html", load)


#: the most of a transcript the session page reads into its timeline
_TIMELINE_BYTES = 1024 * 1024


def _timeline(rt: Runtime, session_id: str, run: SessionRun | None) -> list[Step]:
    """The harness's transcript as a timeline (empty when its harness has not run)."""
    harness = run.harness if run is not None else None
    if harness is None or not harness.name or harness.skipped:
        return []
    found = read_transcript(rt.settings.data_dir, session_id, 0, _TIMELINE_BYTES)
    return timeline(harness.name, found[0].splitlines()) if found else []


@router.get("/sessions/{session_id}")
async def session(request: Request, session_id: str) -> Response:
    def load(rt: Runtime) -> dict[str, Any]:
        found = rt.sessions.get(session_id)
        if found is None:
            raise ApiError("session_not_found", f"no session {session_id!r}")
        s = settled(rt, found)
        trail = rt.audit
        audit, failed = trail.entries(session_id), trail.failures(session_id)
        return {
            "title": f"Session {session_id}",
            "s": s,
            "spec": s.spec_json(),
            "audit": audit,
            "failed": failed,
            "run": s.run,
            "log_tail": log_tail(rt, s) or "",
            "steps": _timeline(rt, session_id, s.run),
            "times": s.run.ordered_times() if s.run is not None else [],
            "cancellable": (SessionStatus.QUEUED, *ACTIVE),
        }

    return await _page(request, "session.html", load)


@router.post("/sessions/{session_id}/cancel")
async def cancel(request: Request, session_id: str) -> Response:
    """The session page's Cancel button: a same-origin form, under the API's rules."""
    rt = runtime(request)
    await run_in_threadpool(require_admin, request)
    await run_in_threadpool(cancel_session, rt, session_id)
    return RedirectResponse(f"/ui/sessions/{quote(session_id, safe='')}", status_code=303)


@router.get("/agents")
async def agents(request: Request) -> Response:
    def load(rt: Runtime) -> dict[str, Any]:
        pipeline = rt.pipeline
        if not isinstance(pipeline, SpawnPipeline):
            return {"title": "Agents", "agents": [], "errors": [], "directory": None}
        source = pipeline.agents
        current = source.current()
        return {
            "title": "Agents",
            "agents": [agent.to_json() for agent in current.agents],
            "errors": list(source.last_errors),
            "directory": str(source.directory),
        }

    return await _page(request, "agents.html", load)


@router.get("/connections")
async def connections(request: Request) -> Response:
    def load(rt: Runtime) -> dict[str, Any]:
        installations = [i.to_json() for i in rt.connections.all()]
        return {"title": "Connections", "installations": installations}

    return await _page(request, "connections.html", load)
