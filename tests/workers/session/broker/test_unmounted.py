"""HOOKSPAWN_UNMOUNTED_CAPABILITIES: what the tool gate grants on a covered repository no mount
of the session names, under each setting; the pure rule, the gate route, and a tool call
executed over MCP against the GitHub stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from agents.github_tools import UNMOUNTED, unmounted_capabilities
from agents.model import Capabilities
from tests.workers.session.broker.conftest import BrokerEnv, open_broker_env
from tests.workers.session.broker.test_access_rules import _mount, _spec
from tests.workers.session.broker.test_mcp_endpoint import _mcp, _text
from triggers.session.access import AccessDenied, tool_grant

OTHER = {"owner": "acme", "repo": "unmounted"}
WORKFLOW = {
    **OTHER,
    "path": ".github/workflows/x.yml",
    "content": "on: push\n",
    "message": "ci",
    "branch": "main",
}


def test_the_settings_grant_the_defaults_at_most_read_or_nothing() -> None:
    assert unmounted_capabilities("default") == UNMOUNTED
    assert UNMOUNTED.merge == "none" and UNMOUNTED.secrets == "none"
    read = unmounted_capabilities("read")
    assert read == Capabilities(
        contents="read",
        pull_requests="read",
        issues="read",
        checks="read",
        actions="read",
        workflows="none",
        secrets="none",
        merge="none",
    )
    assert unmounted_capabilities("none") is None
    with pytest.raises(ValueError, match="'all'"):
        unmounted_capabilities("all")


def test_the_gate_on_an_unmounted_repository_under_each_setting() -> None:
    spec = _spec(_mount(contents="write", pullRequests="write"))
    # a mounted repository is decided by its mount alone, under every setting
    for setting in ("default", "read", "none"):
        grant = tool_grant(spec, "create_or_update_file", "acme/widgets", setting)
        assert grant.permissions == {"contents": "write", "metadata": "read"}

    wrote = tool_grant(spec, "create_or_update_file", "acme/other", "default")
    assert (wrote.mount, wrote.permissions) == (None, {"contents": "write", "metadata": "read"})
    read = tool_grant(spec, "get_file_contents", "acme/other", "read")
    assert (read.mount, read.permissions) == (None, {"contents": "read", "metadata": "read"})
    with pytest.raises(AccessDenied) as refused:
        tool_grant(spec, "create_or_update_file", "acme/other", "read")
    assert refused.value.code == "tool_not_granted"
    assert "HOOKSPAWN_UNMOUNTED_CAPABILITIES=read" in refused.value.message
    for tool in ("get_file_contents", "create_or_update_file"):
        with pytest.raises(AccessDenied) as refused:
            tool_grant(spec, tool, "acme/other", "none")
        assert refused.value.code == "tool_not_granted"
        assert "no mount of the session names acme/other" in refused.value.message
        assert "HOOKSPAWN_UNMOUNTED_CAPABILITIES=none" in refused.value.message


@pytest.fixture(params=["default", "read", "none"])
def env(request: pytest.FixtureRequest, redis_url: str, tmp_path: Path) -> Iterator[BrokerEnv]:
    with open_broker_env(redis_url, tmp_path, unmounted_capabilities=request.param) as found:
        found.github.repos.add("acme/unmounted", {"README.md": "other\n"})
        yield found


def test_an_unmounted_covered_repository_through_the_broker(env: BrokerEnv) -> None:
    setting = env.rt.settings.unmounted_capabilities
    writer = env.start("writer")  # acme/widgets mounted with the defaults (contents: write)

    gate = {
        tool: env.tool(writer, tool, "acme/unmounted") for tool in ("get_issue", "create_issue")
    }

    async def work(client: ClientSession) -> dict[str, Any]:
        return {
            "read": await client.call_tool("get_file_contents", {**OTHER, "path": "README.md"}),
            "write": await client.call_tool("create_or_update_file", WORKFLOW),
        }

    called = _mcp(env, writer, work)
    files = env.github.repos.files("acme/unmounted")
    audit = env.rt.audit.entries(writer.id)
    if setting == "default":
        assert gate["get_issue"].status_code == 200, gate["get_issue"].text
        assert gate["create_issue"].json()["permissions"] == {"issues": "write", "metadata": "read"}
        assert not called["read"].is_error and _text(called["read"]) == "other\n"
        assert not called["write"].is_error, _text(called["write"])
        assert files[".github/workflows/x.yml"] == "on: push\n"
        return
    assert ".github/workflows/x.yml" not in files
    assert called["write"].is_error
    assert _text(called["write"]).startswith("tool_not_granted: create_or_update_file on ")
    assert gate["create_issue"].status_code == 403
    assert gate["create_issue"].json()["error"]["code"] == "tool_not_granted"
    denied = [
        e for e in audit if e["result"] == "denied" and e.get("repository") == "acme/unmounted"
    ]
    assert {e["tool"] for e in denied} >= {"create_issue", "create_or_update_file"}
    if setting == "read":
        assert gate["get_issue"].status_code == 200, gate["get_issue"].text
        assert gate["get_issue"].json()["permissions"] == {"issues": "read", "metadata": "read"}
        assert not called["read"].is_error and _text(called["read"]) == "other\n"
        return
    assert gate["get_issue"].status_code == 403
    assert "HOOKSPAWN_UNMOUNTED_CAPABILITIES=none" in gate["get_issue"].json()["error"]["message"]
    assert called["read"].is_error
    assert "no mount of the session names acme/unmounted" in _text(called["read"])
    # the mounted repository is untouched by the setting
    assert env.tool(writer, "create_issue", "acme/widgets").status_code == 200
