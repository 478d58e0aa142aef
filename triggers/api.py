"""The HTTP application: intake, admin API and health, with one error table."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import FastAPI

from triggers import (
    http_errors,
    receiver,
    routes_agents,
    routes_connections,
    routes_deliveries,
    routes_health,
    routes_sessions,
)
from workers.runtime import Runtime


def create_app(rt: Runtime) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # intake talks to Redis on the event loop; everything else goes through threads
        app.state.aredis = aioredis.Redis.from_url(
            rt.redis_url, socket_timeout=5, socket_connect_timeout=2
        )
        try:
            yield
        finally:
            await app.state.aredis.aclose()

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
    return app
