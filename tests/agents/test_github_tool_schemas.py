"""The GitHub tools' input schemas against the GitHub MCP server's snapshots
(tests/github_mcp_toolsnaps, copied from github/github-mcp-server under its MIT license)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents.github_tool_arguments import PATH_ARGUMENTS
from agents.github_tool_schemas import SHARED_TOOLS, TOOL_SCHEMAS
from agents.github_tools import METHODS, TOOLS, UNGRANTABLE_METHODS

SNAPS = Path(__file__).resolve().parents[1] / "github_mcp_toolsnaps"


def _snapshots() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(SNAPS.glob("*.snap")):
        snap = json.loads(path.read_text(encoding="utf-8"))
        assert snap["name"] == path.stem, path
        found[path.stem] = snap
    return found


def test_every_shared_tool_takes_the_servers_schema_exactly() -> None:
    snaps = _snapshots()
    # a snapshot for every tool hookspawn shares with the server, and no other
    assert set(snaps) == set(SHARED_TOOLS)
    for name, snap in snaps.items():
        ours = TOOL_SCHEMAS[name]
        assert ours.input_schema == snap["inputSchema"], name
        assert ours.description == snap["description"], name
        assert ours.read_only == bool(snap["annotations"].get("readOnlyHint")), name


def test_the_snapshots_are_the_servers_under_its_license() -> None:
    license_text = (SNAPS / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License") and "GitHub" in license_text


def test_the_renamed_tools_answer_the_servers_current_names() -> None:
    # the names the server retired for these tools: the current one is in the table too
    renamed = {
        "get_issue": "issue_read",
        "update_issue": "issue_write",
        "get_pull_request": "pull_request_read",
        "get_pull_request_diff": "pull_request_read",
        "get_pull_request_files": "pull_request_read",
        "get_pull_request_status": "pull_request_read",
        "list_workflow_runs": "actions_list",
    }
    for old, new in renamed.items():
        assert old in TOOLS and new in SHARED_TOOLS, old


def test_a_method_enum_is_the_servers_and_every_method_is_decided() -> None:
    for tool, methods in METHODS.items():
        enum = TOOL_SCHEMAS[tool].input_schema["properties"]["method"]["enum"]
        assert set(methods) <= set(enum), tool
        # what the server has that hookspawn does not execute is either never granted
        # (the Actions mutations beyond the reruns) or refused as an argument
        for method in set(enum) - set(methods):
            assert tool != "actions_run_trigger" or method in UNGRANTABLE_METHODS
        assert "method" in TOOL_SCHEMAS[tool].input_schema["required"], tool
    assert set(UNGRANTABLE_METHODS) < set(
        TOOL_SCHEMAS["actions_run_trigger"].input_schema["properties"]["method"]["enum"]
    )


def test_every_tool_has_a_schema_and_its_path_arguments_are_in_it() -> None:
    assert set(TOOL_SCHEMAS) == set(TOOLS)
    for tool, schema in TOOL_SCHEMAS.items():
        properties = schema.input_schema["properties"]
        assert {"owner", "repo"} <= set(schema.input_schema["required"]), tool
        for name in PATH_ARGUMENTS.get(tool, {}):
            assert name in properties, (tool, name)
