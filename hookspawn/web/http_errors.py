"""The one table at the HTTP edge: exception class → status code, and the shared error body."""

from __future__ import annotations

import math
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from hookspawn.errors import HookspawnError
from templating.errors import Error
from triggers import errors as intake
from workers import errors as work
from workers.github import manual_connections as manual

#: the status of each code the web app answers on purpose (ApiError), the routes' own refusals
API_CODES: dict[str, int] = {
    "invalid_request": 400,
    "unauthorized": 401,
    "cross_origin_request": 403,
    "session_not_found": 404,
    "delivery_not_found": 404,
    "no_transcript": 404,
    "not_cancellable": 409,
    "payload_too_large": 413,
    "unsupported_content_type": 415,
    "explain_unavailable": 501,
    "starts_unavailable": 503,
    # refused by the connection itself, before the app (hookspawn/web/server/limits.py)
    "header_timeout": 408,
    "body_timeout": 408,
    "headers_too_large": 431,
    "too_many_connections": 503,
    "body_budget_exceeded": 503,
}


class ApiError(HookspawnError):
    """An answer the API gives on purpose, by its code: `API_CODES` has the status of a route's
    own refusal; a subclass is answered with the status `STATUS` has for its class."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message, code=code, **details)

    @property
    def status(self) -> int | None:
        return API_CODES.get(self.code)


class MisdirectedRequest(ApiError):
    """A request for a host this server does not answer to (hookspawn/web/server/host_check.py)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("misdirected_request", message, **details)


class MalformedHost(MisdirectedRequest):
    """A `Host` that names no host at all: a bracketed IPv6 address followed by anything but
    `:port`, or one with a zone (hookspawn/web/server/host_check.py)."""

    def __init__(self, message: str, **details: Any) -> None:
        ApiError.__init__(self, "malformed_host", message, **details)


class StartRefused(ApiError):
    """A manual or agent start the spawn pipeline refused, answered as an error.

    Each refusal code of `START_REFUSALS` has its class, made from that table, so `STATUS`
    answers it by class like any error; a refusal with another code is answered 409, a
    failed start 502 (`StartFailed`).
    """

    code = "refused"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(code or self.code, message, **details)

    @staticmethod
    def of(outcome: str, code: str, message: str, details: dict[str, Any]) -> StartRefused:
        """The error answering a start that ended `outcome` (not dispatched) with `code`."""
        known = _START_CLASSES.get(code)
        if known is not None:
            return known(message, outcome=outcome, **details)
        fallback = StartFailed if outcome == "failed" else StartRefused
        return fallback(message, code=code, outcome=outcome, **details)


class StartFailed(StartRefused):
    code = "start_failed"


#: a start's refusal code → the status it is answered with: the one table the start
#: refusals' classes are made from
START_REFUSALS: dict[str, int] = {
    "event_required": 409,
    "spawn_depth_exceeded": 409,
    "unauthorized_repository": 403,
    "repository_access_revoked": 403,
    "permission_not_granted": 403,
    "unresolvable_ref": 422,
    "invalid_ref": 422,
    "unresolvable_text": 422,
    "agent_not_found": 404,
    "session_not_found": 404,
    "idempotency_key_reused": 422,
}


def _start_refusal(code: str) -> type[StartRefused]:
    """The StartRefused subclass of one refusal code (`unauthorized_repository` →
    UnauthorizedRepository)."""
    name = "".join(part.title() for part in code.split("_"))
    attributes = {"code": code, "__module__": __name__, "__doc__": f"A start refused {code}."}
    return type(name, (StartRefused,), attributes)


_START_CLASSES: dict[str, type[StartRefused]] = {
    code: _start_refusal(code) for code in START_REFUSALS
}
UnauthorizedRepository = _START_CLASSES["unauthorized_repository"]

#: exception class → HTTP status, looked up along the exception's MRO (the nearest class
#: listed wins, so order does not matter); a class not listed answers as its parent does
STATUS: dict[type[Exception], int] = {
    intake.IntakeError: 400,
    intake.PayloadTooLarge: 413,
    intake.InvalidSignature: 401,
    intake.UnsupportedContentType: 415,
    work.WorkerError: 400,
    work.Transient: 503,
    work.ConfigurationError: 500,
    work.SessionRecordInvalid: 500,
    work.InvalidCredential: 401,
    work.TooManyFailures: 429,
    work.BrokerDenied: 403,
    work.BrokerNotFound: 404,
    manual.ConnectionConflict: 409,
    manual.ConnectionNotFound: 404,
    redis.RedisError: 503,
    MisdirectedRequest: 421,
    MalformedHost: 400,
    StartRefused: 409,
    StartFailed: 502,
    **{_START_CLASSES[code]: status for code, status in START_REFUSALS.items()},
}


#: the Retry-After of an answer the store's absence made 503: a failover takes seconds
STORE_RETRY_AFTER = "1"


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def status_of(exc: BaseException) -> int:
    """The status `exc` is answered with: its own (an ApiError's), else its nearest class's."""
    if isinstance(exc, ApiError) and exc.status is not None:
        return exc.status
    for cls in type(exc).__mro__:
        status = STATUS.get(cls)
        if status is not None:
            return status
    return 500


def code_of(exc: BaseException) -> str:
    """The code `exc` is answered with."""
    if isinstance(exc, redis.RedisError):
        return "store_unavailable"
    if isinstance(exc, Error):
        return exc.code
    return "internal_error"


def to_response(exc: Exception) -> JSONResponse:
    code = code_of(exc)
    if isinstance(exc, redis.RedisError):
        body = error_body(code, "the delivery store is unreachable")
    elif isinstance(exc, Error):
        body = error_body(code, exc.message, exc.details)
    else:
        body = error_body(code, str(exc))
    status = status_of(exc)
    headers = {}
    if status == 429 and isinstance(exc, Error) and "retryAfter" in exc.details:
        headers["retry-after"] = str(exc.details["retryAfter"])
    elif status == 503 and isinstance(exc, work.Transient) and exc.retry_after:
        headers["retry-after"] = str(math.ceil(exc.retry_after))
    elif status == 503 and isinstance(exc, redis.RedisError):
        headers["retry-after"] = STORE_RETRY_AFTER
    return JSONResponse(body, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return to_response(exc)

    async def handle_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        # 400 from the framework: a body it could not parse (not UTF-8, not the declared type)
        code = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed"}.get(
            exc.status_code, "http_error"
        )
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    async def handle_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = [
            {"loc": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg", "")}
            for e in exc.errors()
        ]
        first = problems[0] if problems else {"loc": "", "message": "invalid request"}
        return JSONResponse(
            error_body(
                "invalid_request", f"{first['loc']}: {first['message']}", {"errors": problems}
            ),
            status_code=422,
        )

    async def handle_gone(request: Request, exc: Exception) -> JSONResponse:
        # the client left (or hookspawn.web.server.limits cut its request off and answered it): this
        # answer goes nowhere, but it keeps a routine disconnect out of the error log
        message = "the client disconnected before its request was read"
        return JSONResponse(error_body("client_disconnected", message), status_code=400)

    for cls in (ApiError, intake.IntakeError, work.WorkerError, redis.RedisError):
        app.add_exception_handler(cls, handle)
    app.add_exception_handler(ClientDisconnect, handle_gone)
    app.add_exception_handler(StarletteHTTPException, handle_http)
    app.add_exception_handler(RequestValidationError, handle_validation)
