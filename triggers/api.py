"""The HTTP application: intake, admin API and health, with one error table."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from triggers import (
    api_models,
    http_errors,
    receiver,
    routes_agents,
    routes_connections,
    routes_deliveries,
    routes_explain,
    routes_health,
    routes_metrics,
    routes_sessions,
    ui,
)
from workers.runtime import Runtime


def create_app(rt: Runtime) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with routes_metrics.flushing(app):
                yield
        finally:
            client = getattr(app.state, "aredis", None)
            if client is not None:
                await client.aclose()

    app = FastAPI(
        title="hookspawn",
        version="0.1.0",
        description="GitHub webhooks in, agent sessions out.",
        lifespan=lifespan,
        # no OpenTelemetry here: FastAPI would otherwise look for a provider on every request
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.runtime = rt
    http_errors.install(app)
    app.include_router(receiver.router)
    app.include_router(routes_deliveries.router)
    app.include_router(routes_health.router)
    app.include_router(routes_agents.router)
    app.include_router(routes_sessions.router)
    app.include_router(routes_connections.router)
    app.include_router(routes_explain.router)
    app.include_router(routes_metrics.router)
    app.include_router(ui.router)
    app.openapi = _document(app)  # type: ignore[method-assign]
    return app


def _document(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """/openapi.json as FastAPI generates it, with its 422s saying what `http_errors` answers."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = api_models.document_validation_errors(generate())
        return app.openapi_schema

    return openapi
