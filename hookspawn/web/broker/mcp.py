"""`/sessions/{id}/mcp`: the session's GitHub tools over MCP's Streamable HTTP transport.

The official `mcp` SDK speaks the protocol (a low-level Server, stateless, JSON answers); the
session credential (`Authorization: Bearer`) is checked first, so a request without it is the
API's 401 `invalid_credential` in the shared error shape before any MCP processing. The route
sits inside the app, so the Host check and the connection limits apply to it as to every route.
`tools/list` answers the tools the session may call that hookspawn executes; `tools/call` runs
the broker's gate and calls GitHub itself (workers.session.tool_calls).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import redis
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agents.github_tool_schemas import TOOL_SCHEMAS
from hookspawn.web import http_errors
from hookspawn.web.broker.routes import broker, tool_session
from templating.errors import Error
from triggers.session.spec import SessionSpec
from workers.session.tool_calls import ToolCalls

__all__ = ["PATH", "install"]

PATH = "/sessions/{session_id}/mcp"
_CALLER = "hookspawn_mcp_caller"


@dataclass(frozen=True)
class _Caller:
    """The authenticated session a request is for, and the executor of its calls."""

    session_id: str
    spec: SessionSpec
    calls: ToolCalls


def _caller(ctx: Any) -> _Caller:
    request = ctx.request
    caller = request.scope.get("state", {}).get(_CALLER) if request is not None else None
    if not isinstance(caller, _Caller):  # never: the endpoint authenticates every request
        raise RuntimeError("an MCP request reached the tools without an authenticated session")
    return caller


async def _list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    caller = _caller(ctx)
    tools = []
    for name in caller.calls.listed(caller.spec):
        schema = TOOL_SCHEMAS[name]
        tools.append(
            types.Tool(
                name=name,
                description=schema.description,
                input_schema=schema.input_schema,
                annotations=types.ToolAnnotations(read_only_hint=schema.read_only),
            )
        )
    return types.ListToolsResult(tools=tools)


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    caller = _caller(ctx)
    outcome = await run_in_threadpool(
        caller.calls.call, caller.session_id, caller.spec, params.name, params.arguments or {}
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=outcome.text)], is_error=outcome.is_error
    )


def _server() -> Server[Any]:
    return Server(
        "hookspawn-github",
        version="1",
        instructions="The session's GitHub tools, executed by hookspawn with the session's "
        "own grants; arguments as the GitHub MCP server takes them.",
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


class McpEndpoint:
    """The ASGI endpoint: authenticate, then hand the request to the SDK's transport."""

    def __init__(self) -> None:
        #: the SDK's transports while the app runs: one per run of the app's lifespan (the SDK
        #: runs each only once), the newest serving
        self.managers: list[StreamableHTTPSessionManager] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        session_id = str(request.path_params["session_id"])
        try:
            spec = await tool_session(request, session_id)
        except (Error, redis.RedisError) as exc:
            await http_errors.to_response(exc)(scope, receive, send)
            return
        if not self.managers:  # never while the app serves: its lifespan runs one
            raise RuntimeError("the MCP endpoint is not running (the app's lifespan has not run)")
        api_url = request.app.state.runtime.settings.github_api_url
        calls = ToolCalls(broker(request), api_url)
        scope.setdefault("state", {})[_CALLER] = _Caller(session_id, spec, calls)
        await self.managers[-1].handle_request(scope, receive, send)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        # stateless: every POST stands alone (the session is the credential, not an MCP
        # session id), and answers JSON rather than an event stream
        manager = StreamableHTTPSessionManager(_server(), stateless=True, json_response=True)
        async with manager.run():
            self.managers.append(manager)
            try:
                yield
            finally:
                self.managers.remove(manager)


def install(app: Starlette) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Add the route to `app`; answers the context the app's lifespan must enter."""
    endpoint = McpEndpoint()
    app.router.routes.append(Route(PATH, endpoint, methods=["GET", "POST", "DELETE"]))
    return endpoint.running
