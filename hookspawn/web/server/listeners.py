"""Two listeners, one server: the admin API on its port, the broker alone on its own.

A session's sandbox may reach the broker (its git credentials, its GitHub tools, its MCP
endpoint) and, through srt's proxy, nothing else. Were that the admin API's address, every
admin route would be one request away from the sandbox, and with no HOOKSPAWN_ADMIN_TOKEN (the
loopback default) answered. So `web` listens twice on its host: `--port` serves the whole app
(`hookspawn.web.api`), the broker port serves `broker_app`, which has the session routes and
nothing else: `git-credential`, `github-tools`, `github-tools/{tool}`, `mcp` and `end`, each
authenticated by the session's own credential. Every other path there is 404, with or without
an admin token; the admin token and the loopback trust do not exist on it.

Both sockets belong to the same uvicorn server (each process of `web --workers N` has a pair),
so the connection limits (hookspawn/web/server/limits.py) and the Host check apply to both alike.
`Listeners` is the ASGI application uvicorn runs: it sends a request to the app of the socket
that accepted it, by the local port of the connection (`scope["server"]`), never by anything
the client sends; a request on any socket but the admin one gets the broker app.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from hookspawn.web import http_errors
from hookspawn.web.api import HookspawnApp, HostCheckedApp, create_app, undocumented
from hookspawn.web.broker import mcp as broker_mcp
from hookspawn.web.broker import routes as broker_routes
from hookspawn.web.server import host_check
from workers.runtime import Runtime

__all__ = ["BrokerApp", "Listeners", "broker_app", "listening_app"]


class BrokerApp(HostCheckedApp):
    """The broker listener's app: the Host check, then the session routes only."""


def broker_app(rt: Runtime, *, bound_host: str = "127.0.0.1") -> BrokerApp:
    """The session routes, with the session credential as their only authentication."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp_endpoint():
            yield

    app = undocumented(BrokerApp, title="hookspawn broker", lifespan=lifespan)
    app.state.runtime = rt
    settings = rt.settings
    allowed = [*settings.allowed_hosts]
    if settings.broker_public_url:
        allowed.append(host_check.host_name(_netloc(settings.broker_public_url)))
    app.hosts = host_check.HostGate(
        host_check.HostPolicy.of(bound=bound_host, public_url=settings.public_url, allowed=allowed)
    )
    http_errors.install(app)
    app.include_router(broker_routes.session_router)
    mcp_endpoint = broker_mcp.install(app)
    return app


def _netloc(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2]


class Listeners:
    """The application uvicorn serves on both sockets: each request to the app of the socket
    it came in on; the lifespan runs both apps' lifespans."""

    def __init__(self, main: HookspawnApp, broker: BrokerApp, main_port: int) -> None:
        self.main = main
        self.broker = broker
        self.main_port = main_port

    def _on_main(self, scope: Scope) -> bool:
        """Whether the connection came in on the admin API's socket (its local port)."""
        server = scope.get("server")
        return server is not None and server[1] == self.main_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app: Any = self.main if self._on_main(scope) else self.broker
        await app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with AsyncExitStack() as running:
            try:
                for app in (self.main, self.broker):
                    await running.enter_async_context(app.router.lifespan_context(app))
            except BaseException as exc:
                await send({"type": "lifespan.startup.failed", "message": repr(exc)})
                raise
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


def listening_app(rt: Runtime, *, bound_host: str, main_port: int) -> Listeners:
    """The admin app and the broker app over one runtime, told apart by `main_port` (the
    admin listener's port; any other socket is the broker's)."""
    return Listeners(
        create_app(rt, bound_host=bound_host), broker_app(rt, bound_host=bound_host), main_port
    )
