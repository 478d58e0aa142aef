"""`/sessions/{id}/mcp`: the session's GitHub tools over MCP's Streamable HTTP transport.

The official `mcp` SDK speaks the protocol (a low-level Server, stateless, JSON answers); the
session credential (`Authorization: Bearer`) is checked first, so a request without it is the
API's 401 `invalid_credential` in the shared error shape before any MCP processing. The route
sits inside the app, so the Host check and the connection limits apply to it as to every route.
`tools/list` answers the tools the session may call that hookspawn executes; `tools/call` runs
the broker's gate and calls GitHub itself (workers.session.tool_calls).

The SDK is loaded on a process's first MCP request (`mcp_server`), in a thread, so the event
loop goes on serving meanwhile; its transport then runs in the app's lifespan until the app
stops. A web process that never serves a session's tools never pays the second of CPU the
SDK's import costs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import redis
from anyio.abc import TaskGroup, TaskStatus
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hookspawn.web import http_errors
from hookspawn.web.broker.routes import broker, tool_session
from templating.errors import Error
from workers.session.tool_calls import ToolCalls

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["PATH", "install"]

PATH = "/sessions/{session_id}/mcp"


def _new_manager() -> StreamableHTTPSessionManager:
    from hookspawn.web.broker.mcp_server import session_manager

    return session_manager()


class McpEndpoint:
    """The ASGI endpoint: authenticate, then hand the request to the SDK's transport."""

    def __init__(self) -> None:
        #: the SDK's transports while the app runs: one per run of the app's lifespan (the SDK
        #: runs each only once), the newest serving; started on the first request of a run
        self.managers: list[StreamableHTTPSessionManager] = []
        #: the task groups of the lifespans running (the newest last), where transports run
        self._groups: list[TaskGroup] = []
        self._starting = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        session_id = str(request.path_params["session_id"])
        try:
            spec = await tool_session(request, session_id)
        except (Error, redis.RedisError) as exc:
            await http_errors.to_response(exc)(scope, receive, send)
            return
        manager = await self._manager()
        from hookspawn.web.broker.mcp_server import CALLER, Caller  # loaded by _manager

        api_url = request.app.state.runtime.settings.github_api_url
        calls = ToolCalls(broker(request), api_url)
        scope.setdefault("state", {})[CALLER] = Caller(session_id, spec, calls)
        await manager.handle_request(scope, receive, send)

    async def _manager(self) -> StreamableHTTPSessionManager:
        """The running transport, started (the SDK loaded) by the first request that needs it."""
        async with self._starting:
            if not self.managers:
                if not self._groups:  # never while the app serves: its lifespan runs one
                    raise RuntimeError(
                        "the MCP endpoint is not running (the app's lifespan has not run)"
                    )
                await self._groups[-1].start(self._run_transport)
        return self.managers[-1]

    async def _run_transport(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        manager = await anyio.to_thread.run_sync(_new_manager)
        async with manager.run():
            self.managers.append(manager)
            try:
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self.managers.remove(manager)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._groups.append(group)
            try:
                yield
            finally:
                self._groups.remove(group)
                group.cancel_scope.cancel()


def install(app: Starlette) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Add the route to `app`; answers the context the app's lifespan must enter."""
    endpoint = McpEndpoint()
    app.router.routes.append(Route(PATH, endpoint, methods=["GET", "POST", "DELETE"]))
    return endpoint.running
