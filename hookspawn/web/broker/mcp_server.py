"""The MCP SDK's side of `/sessions/{id}/mcp`: the low-level Server with the session's GitHub
tools, run by the SDK's stateless Streamable HTTP transport.

Imported by `hookspawn.web.broker.mcp` on a process's first MCP request, not at start: the SDK
and its protocol models cost about a second of CPU to import, which a web process that never
serves a session's tools (most of a fleet's, and every short-lived one) need not pay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.concurrency import run_in_threadpool

from agents.github_tool_schemas import TOOL_SCHEMAS
from triggers.session.spec import SessionSpec
from workers.session.tool_calls import ToolCalls

__all__ = ["CALLER", "Caller", "session_manager"]

#: the request scope's state key the endpoint leaves the authenticated session under
CALLER = "hookspawn_mcp_caller"


@dataclass(frozen=True)
class Caller:
    """The authenticated session a request is for, and the executor of its calls."""

    session_id: str
    spec: SessionSpec
    calls: ToolCalls


def _caller(ctx: Any) -> Caller:
    request = ctx.request
    caller = request.scope.get("state", {}).get(CALLER) if request is not None else None
    if not isinstance(caller, Caller):  # never: the endpoint authenticates every request
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


def session_manager() -> StreamableHTTPSessionManager:
    """The SDK's transport for the endpoint: stateless (every POST stands alone: the session is
    the credential, not an MCP session id), answering JSON rather than an event stream."""
    return StreamableHTTPSessionManager(_server(), stateless=True, json_response=True)
