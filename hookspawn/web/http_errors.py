"""The one table at the HTTP edge: exception class → status code, and the shared error body."""

from __future__ import annotations

from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from triggers import errors as intake
from workers import errors as work

#: first match wins, so subclasses come before their bases
STATUS: list[tuple[type[Exception], int]] = [
    (intake.PayloadTooLarge, 413),
    (intake.InvalidSignature, 401),
    (intake.UnsupportedContentType, 415),
    (intake.IntakeError, 400),
    (work.InvalidCredential, 401),
    (work.BrokerDenied, 403),
    (work.BrokerNotFound, 404),
    (work.StoreUnavailable, 503),
    (work.ConfigurationError, 500),
    (work.Transient, 503),
    (work.WorkerError, 400),
    (redis.RedisError, 503),
]


class ApiError(intake.TriggersError):
    """An answer the API gives on purpose (404 not found, 401 unauthorized, 409 refusals …)."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def status_of(exc: Exception) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def to_response(exc: Exception) -> JSONResponse:
    if isinstance(exc, ApiError):
        return JSONResponse(error_body(exc.code, exc.message, exc.details), status_code=exc.status)
    if isinstance(exc, redis.RedisError):
        return JSONResponse(
            error_body("store_unavailable", "the delivery store is unreachable"), status_code=503
        )
    code = getattr(exc, "code", "internal_error")
    message = getattr(exc, "message", None) or str(exc)
    details = getattr(exc, "details", None)
    return JSONResponse(error_body(code, message, details), status_code=status_of(exc))


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
        # the client left (or hookspawn.web.limits cut its request off and answered it): this
        # answer goes nowhere, but it keeps a routine disconnect out of the error log
        message = "the client disconnected before its request was read"
        return JSONResponse(error_body("client_disconnected", message), status_code=400)

    for cls in (ApiError, intake.IntakeError, work.WorkerError, redis.RedisError):
        app.add_exception_handler(cls, handle)
    app.add_exception_handler(ClientDisconnect, handle_gone)
    app.add_exception_handler(StarletteHTTPException, handle_http)
    app.add_exception_handler(RequestValidationError, handle_validation)
