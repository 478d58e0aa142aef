"""The session's MCP endpoint, through the official `mcp` client against the GitHub stand-in."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests import loopback
from tests.live_server import live_client
from tests.workers.session.broker.conftest import BrokerEnv, Session

WIDGETS = {"README.md": "widgets\n", "src/app.py": "print('hi')\n"}


def _url(env: BrokerEnv, session: Session) -> str:
    return f"{env.broker_url(session)}/mcp"


def _mcp(env: BrokerEnv, session: Session, work: Any, *, url: str | None = None) -> Any:
    """Run `work(client_session)` through the official client with the session's credential
    (`url`: the broker's session URL on another server of the app)."""
    endpoint = f"{url}/mcp" if url else _url(env, session)

    async def main() -> Any:
        async with (
            loopback.McpHttp(headers=session.auth, timeout=30) as http,
            streamable_http_client(endpoint, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as client,
        ):
            await client.initialize()
            return await work(client)

    return anyio.run(main)


def _text(result: Any) -> str:
    assert len(result.content) == 1
    return str(result.content[0].text)


def test_list_read_write_refusal_and_uncovered(broker_env: BrokerEnv) -> None:
    broker_env.github.repos.add("acme/widgets", WIDGETS)
    writer, reader = broker_env.start("writer"), broker_env.start("reader")

    async def as_writer(client: ClientSession) -> dict[str, Any]:
        listed = await client.list_tools()
        read = await client.call_tool(
            "get_file_contents", {"owner": "acme", "repo": "widgets", "path": "src/app.py"}
        )
        wrote = await client.call_tool(
            "create_or_update_file",
            {
                "owner": "acme",
                "repo": "widgets",
                "path": "NOTES.md",
                "content": "written over MCP\n",
                "message": "notes",
                "branch": "main",
            },
        )
        issue = await client.call_tool(
            "create_issue", {"owner": "acme", "repo": "widgets", "title": "found a bug"}
        )
        uncovered = await client.call_tool(
            "get_issue", {"owner": "someone", "repo": "else", "issue_number": 1}
        )
        missing = await client.call_tool(
            "get_file_contents", {"owner": "acme", "repo": "widgets", "path": "nope.txt"}
        )
        return {
            "tools": {t.name: t for t in listed.tools},
            "read": read,
            "wrote": wrote,
            "issue": issue,
            "uncovered": uncovered,
            "missing": missing,
        }

    got = _mcp(broker_env, writer, as_writer)
    tools = got["tools"]
    # exactly the tools the session may call: hookspawn executes every one of them, with the
    # GitHub MCP server's argument names
    allowed = broker_env.client.get(
        f"/sessions/{writer.id}/github-tools", headers=writer.auth
    ).json()["items"]
    assert set(tools) == set(allowed)
    assert {"get_file_contents", "create_or_update_file", "push_files", "create_issue"} <= set(
        tools
    )
    assert "merge_pull_request" not in tools  # merge is not granted
    assert "list_tags" in tools and "actions_run_trigger" not in tools  # actions: read
    assert tools["get_pull_request"].input_schema["required"] == ["owner", "repo", "pullNumber"]
    assert "issue_number" in tools["add_issue_comment"].input_schema["properties"]

    assert not got["read"].is_error
    assert _text(got["read"]) == "print('hi')\n"
    assert not got["wrote"].is_error, _text(got["wrote"])
    assert broker_env.github.repos.files("acme/widgets")["NOTES.md"] == "written over MCP\n"
    assert json.loads(_text(got["issue"]))["title"] == "found a bug"
    assert [i["title"] for i in broker_env.github.repos.issues("acme/widgets")] == ["found a bug"]
    assert got["uncovered"].is_error
    assert _text(got["uncovered"]).startswith("repository_not_covered: ")
    assert got["missing"].is_error
    assert _text(got["missing"]).startswith("github_error: 404 ")

    async def as_reader(client: ClientSession) -> Any:
        names = {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool(
            "create_or_update_file",
            {
                "owner": "acme",
                "repo": "widgets",
                "path": "NOTES.md",
                "content": "x",
                "message": "m",
                "branch": "main",
            },
        )
        return names, refused

    names, refused = _mcp(broker_env, reader, as_reader)
    assert "get_file_contents" in names and "create_or_update_file" not in names
    assert refused.is_error
    assert _text(refused).startswith("tool_not_granted: ")
    assert broker_env.github.repos.files("acme/widgets")["NOTES.md"] == "written over MCP\n"

    # the same audit entries as the gate's own route
    audit = broker_env.rt.audit
    writer_tools = [e for e in audit.entries(writer.id) if e.get("kind") == "tool"]
    assert {(e.get("tool"), e.get("result"), e.get("code")) for e in writer_tools} >= {
        ("get_file_contents", "allowed", None),
        ("create_or_update_file", "allowed", None),
        ("get_issue", "denied", "repository_not_covered"),
    }
    reader_tools = [e for e in audit.entries(reader.id) if e.get("kind") == "tool"]
    assert [(e.get("tool"), e.get("code")) for e in reader_tools] == [
        ("create_or_update_file", "tool_not_granted")
    ]


def test_the_endpoint_needs_the_session_credential(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        answer = broker_env.client.post(
            f"/sessions/{writer.id}/mcp",
            json=ping,
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == "invalid_credential"


def test_the_host_check_applies_before_the_credential(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    answer = broker_env.client.post(
        f"/sessions/{writer.id}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={**writer.auth, "Host": "evil.example"},
    )
    assert answer.status_code == 421
    assert answer.json()["error"]["code"] == "misdirected_request"


def test_bad_arguments_and_unexecuted_tools_are_tool_errors(broker_env: BrokerEnv) -> None:
    broker_env.github.repos.add("acme/widgets", WIDGETS)
    writer = broker_env.start("writer")

    async def work(client: ClientSession) -> list[str]:
        asked: list[tuple[str, dict[str, Any]]] = [
            ("get_pull_request", {"owner": "acme", "repo": "widgets", "pullNumber": "one"}),
            ("get_issue", {"owner": "acme/widgets", "repo": "x", "issue_number": 1}),
            ("list_workflows", {"owner": "acme", "repo": "widgets"}),
            ("delete_repository", {"owner": "acme", "repo": "widgets"}),
        ]
        texts = []
        for name, arguments in asked:
            result = await client.call_tool(name, arguments)
            assert result.is_error
            texts.append(_text(result))
        return texts

    texts = _mcp(broker_env, writer, work)
    assert texts[0].startswith(
        "invalid_argument: argument 'pullNumber' ('one') must be a whole number"
    )
    assert texts[1].startswith("invalid_argument: argument 'owner'")
    assert texts[2].startswith("unknown_tool: ")
    assert texts[3].startswith("unknown_tool: ")
    assert broker_env.github.repos.issues("acme/widgets") == []


def test_an_app_served_again_serves_mcp_again(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")

    async def names(client: ClientSession) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    for _ in range(2):  # the same app through two more lifespans, one after the other
        with live_client(broker_env.app) as second:
            url = f"{second.base_url}/sessions/{writer.id}"
            assert "create_issue" in _mcp(broker_env, writer, names, url=url)
    assert "create_issue" in _mcp(broker_env, writer, names)
