"""A harness under srt gets the session's MCP endpoint: HOOKSPAWN_MCP_URL and a Claude Code
`--mcp-config` file it can read, which works as written with the official `mcp` client, outside
the home and gone when the session ends."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests import loopback
from tests.conftest import wait_for
from tests.secret_scan import file_haystacks, leaks
from tests.workers.session.runner.conftest import Origin
from tests.workers.session.runner.test_github_app import github_app_stack

#: the session's home under its root
HOME = "home/user"

# the harness says what it was given (never the credential), then waits for the test; the
# config's path comes as an argument, `$HOOKSPAWN_MCP_CONFIG` in the command as written
HARNESS = (
    "/bin/sh -c '"
    'test -r "$1" && echo "$HOOKSPAWN_MCP_URL $1" > "$HOME/mcp-ready"; i=0; '
    'while [ ! -e "$HOME/mcp-done" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'
    "' "
    "harness $HOOKSPAWN_MCP_CONFIG"
)


def _use(config: dict[str, Any]) -> tuple[set[str], Any, Any]:
    """The config as `claude --mcp-config` would: list, a read, a refused write."""
    server = config["mcpServers"]["github"]
    assert server["type"] == "http"

    async def main() -> tuple[set[str], Any, Any]:
        async with (
            loopback.McpHttp(headers=server["headers"], timeout=30) as http,
            streamable_http_client(server["url"], http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as client,
        ):
            await client.initialize()
            names = {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool(
                "get_file_contents", {"owner": "acme", "repo": "widgets", "path": "README.md"}
            )
            write = await client.call_tool(
                "create_issue", {"owner": "acme", "repo": "widgets", "title": "t"}
            )
            return names, read, write

    return anyio.run(main)


def test_the_harness_gets_the_mcp_url_and_a_working_config(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    with github_app_stack(
        redis_url,
        shared_dir,
        origin,
        harness_command=HARNESS,
        pr_review={"setup": []},
    ) as stack:
        stack.github.repos.add("acme/widgets", {"README.md": "widgets\n"})
        session_id = stack.deliver("app-mcp-1", webhooks_dir)
        with stack.runner():
            seen: dict[str, Any] = {}

            def ready() -> bool:
                seen.update(stack.http.get(f"/sessions/{session_id}").json())
                root = seen.get("workspace")
                return isinstance(root, str) and (Path(root) / HOME / "mcp-ready").exists()

            wait_for(ready, timeout=60)
            root = Path(seen["workspace"])
            url, config_path = (root / HOME / "mcp-ready").read_text().split()
            config = json.loads(Path(config_path).read_text())
            mode = Path(config_path).stat().st_mode & 0o777
            names, read, write = _use(config)
            (root / HOME / "mcp-done").write_text("")
            session = stack.ended(session_id)
    assert session["status"] == "succeeded", session
    assert url == f"{stack.settings.broker_base_url}/sessions/{session_id}/mcp"
    assert config["mcpServers"]["github"]["url"] == url
    # outside the session's home (never in a setup snapshot), readable by its account alone
    assert Path(config_path).parent == root / ".hookspawn"
    assert not Path(config_path).is_relative_to(root / "home")
    assert mode == 0o600
    assert "harness: /bin/sh -c" in session["logTail"]
    assert "harness $HOOKSPAWN_MCP_CONFIG" in session["logTail"]  # logged as configured
    assert "get_file_contents" in names and "create_or_update_file" not in names
    assert not read.is_error and read.content[0].text == "widgets\n"
    assert not write.is_error  # issues: write is the default
    assert not Path(config_path).parent.exists()  # removed with the run; its credential revoked
    files = [p for p in stack.settings.data_dir.rglob("*") if p.is_file()]
    found, _ = leaks(stack.secrets, file_haystacks(files))
    assert found == []


#: a sandboxed script's MCP client, standard library only (it imports json, os and
#: urllib.request): `call(id, method, params)` posts one JSON-RPC request to the endpoint and with
#: the header the session's MCP config file names, and answers the reply
MCP_CALL = r"""
config = json.load(open(os.environ["HOOKSPAWN_MCP_CONFIG"]))["mcpServers"]["github"]
def call(id, method, params):
    request = urllib.request.Request(
        config["url"],
        data=json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode(),
        headers={**config["headers"], "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())
"""

#: a harness calling its MCP endpoint itself, from inside srt, with nothing but the standard
#: library: initialize, then `tools/call` (a read, a write, a refusal), with the header the
#: config file holds; what GitHub answered goes to a file in the session's home for the test
SANDBOXED_CLIENT = (
    "import json, os, urllib.request\n"
    + MCP_CALL
    + r"""
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "harness", "version": "1"}})
repo = {"owner": "acme", "repo": "widgets"}
read = call(2, "tools/call", {"name": "get_file_contents",
                              "arguments": {**repo, "path": "README.md"}})
wrote = call(3, "tools/call", {"name": "create_issue",
                               "arguments": {**repo, "title": "from the sandbox"}})
refused = call(4, "tools/call", {"name": "merge_pull_request",
                                 "arguments": {**repo, "pullNumber": 1}})
result = {"read": read, "wrote": wrote, "refused": refused}
open(os.environ["HOME"] + "/mcp-result", "w").write(json.dumps(result))
"""
)


def test_a_harness_inside_srt_calls_its_tools_with_the_standard_library(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    with github_app_stack(
        redis_url,
        shared_dir,
        origin,
        harness_command=f"/usr/bin/python3 -c {shlex.quote(SANDBOXED_CLIENT)}",
        pr_review={"setup": []},
    ) as stack:
        stack.github.repos.add("acme/widgets", {"README.md": "widgets\n"})
        session_id = stack.deliver("app-mcp-2", webhooks_dir)
        with stack.runner():
            session = stack.ended(session_id)
    assert session["status"] == "succeeded", (session["failure"], session["logTail"])
    result = json.loads((Path(session["workspace"]) / HOME / "mcp-result").read_text())
    read, refused = result["read"]["result"], result["refused"]["result"]
    wrote = result["wrote"]["result"]
    assert not read.get("isError") and read["content"][0]["text"] == "widgets\n"
    assert not wrote.get("isError"), wrote  # issues: write is the default
    assert json.loads(wrote["content"][0]["text"])["title"] == "from the sandbox"
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("tool_not_granted: ")
