"""The HTTP application: intake, admin API and health, with one error table."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.types import Receive, Scope, Send

from hookspawn.web import deps, error_models, http_errors
from hookspawn.web.broker import mcp as broker_mcp
from hookspawn.web.broker import routes as broker_routes
from hookspawn.web.broker import token_revocation
from hookspawn.web.intake import receiver
from hookspawn.web.routes import (
    agents,
    connections,
    deliveries,
    explain,
    github_app,
    health,
    metrics,
    runner,
    sessions,
)
from hookspawn.web.server import host_check
from hookspawn.web.ui import pages
from workers.runtime import Runtime

log = logging.getLogger(__name__)


class HostCheckedApp(FastAPI):
    """FastAPI with the Host check before everything (the admin API's app and the broker
    listener's alike)."""

    hosts: host_check.HostGate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.hosts.refusal(host_header(scope))
            if refusal is not None:
                await http_errors.to_response(refusal)(scope, receive, send)
                return
        await self.checked(scope, receive, send)

    async def checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request past the Host check: FastAPI's middleware stack and router."""
        await super().__call__(scope, receive, send)


class HookspawnApp(HostCheckedApp):
    """FastAPI, with the Host check before everything, and the webhook intake answered
    before the middleware stack and router.

    `POST /webhooks/github` is the one hot path: it is declared on the router like every
    route (so it is in the OpenAPI document and behaves the same), but requests for it go
    straight to its endpoint, with the same error table, skipping a dozen ASGI layers.
    """

    async def checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == receiver.PATH:
            scope["app"] = self
            await receiver.intake(self, scope, receive, send)
            return
        await super().checked(scope, receive, send)


App = TypeVar("App", bound=FastAPI)


def undocumented(cls: type[App], **options: Any) -> App:
    """An app of `cls` that serves no OpenAPI document or docs pages of its own, and does no
    OpenTelemetry (FastAPI would otherwise look for a provider on every request)."""
    return cls(
        telemetry={"tracing": False, "metrics": False, "logs": False},
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        **options,
    )


def host_header(scope: Scope) -> bytes | None:
    """The raw `Host` header of a request, or None without one."""
    for name, value in scope["headers"]:
        if name == b"host":
            return bytes(value)
    return None


def create_app(rt: Runtime, *, bound_host: str = "127.0.0.1") -> HookspawnApp:
    """The app for a server listening on `bound_host` (for the Host check)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with (
                metrics.flushing(app),
                token_revocation.revoking(app),
                mcp_endpoint(),
            ):
                yield
        finally:
            await receiver.close_recorder(app)

    # the OpenAPI document is served below behind the admin token, like every route but intake
    # and health
    app = undocumented(
        HookspawnApp,
        title="hookspawn",
        version="0.1.0",
        description="GitHub webhooks in, agent sessions out.",
        lifespan=lifespan,
    )
    app.state.runtime = rt
    settings = rt.settings
    hosts = host_check.HostPolicy.of(
        bound=bound_host, public_url=settings.public_url, allowed=settings.allowed_hosts
    )
    if hosts.any_host:
        log.warning(
            "listening on %s with neither HOOKSPAWN_PUBLIC_URL nor HOOKSPAWN_ALLOWED_HOSTS set: "
            "requests for every Host are answered (set either to answer only the names this "
            "server is reached by)",
            bound_host,
        )
    app.hosts = host_check.HostGate(hosts)
    http_errors.install(app)
    for routes in (
        receiver,
        deliveries,
        health,
        agents,
        sessions,
        broker_routes,
        runner,
        connections,
        explain,
        github_app,
        metrics,
        pages,
    ):
        app.include_router(routes.router)
    mcp_endpoint = broker_mcp.install(app)
    app.openapi = _document(app)  # type: ignore[method-assign]
    _publish_document(app)
    return app


def _publish_document(app: FastAPI) -> None:
    """/openapi.json, /docs and /redoc, each needing the admin token (or the /ui cookie)."""
    admin = [Depends(deps.require_admin)]

    @app.get("/openapi.json", include_in_schema=False, dependencies=admin)
    async def openapi_document() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=admin)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} API")

    @app.get("/redoc", include_in_schema=False, dependencies=admin)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{app.title} API")


def _document(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """/openapi.json as FastAPI generates it, with its 422s saying what `http_errors` answers."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = error_models.document_validation_errors(generate())
        return app.openapi_schema

    return openapi
