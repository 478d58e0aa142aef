"""The input schemas of the GitHub tools hookspawn executes, as the GitHub MCP server names them.

Argument names and shapes follow https://github.com/github/github-mcp-server (pkg/github:
repositories.go, pullrequests.go, issues.go, actions.go), so a harness written for that server
calls hookspawn's the same way. Only tools listed here are executed; the rest of the tool table
(agents.github_tools) stays a gate decision without an executor and is never listed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SHARED_TOOLS", "TOOL_SCHEMAS", "ToolSchema"]


@dataclass(frozen=True)
class ToolSchema:
    description: str
    input_schema: dict[str, Any]
    read_only: bool


def _s(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _n(description: str) -> dict[str, Any]:
    return {"type": "number", "description": description}


def _i(description: str) -> dict[str, Any]:
    """A whole number that names something (a pull request, an issue): 1 or more."""
    return {"type": "integer", "description": description, "minimum": 1}


def _b(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _e(description: str, *values: str) -> dict[str, Any]:
    return {"type": "string", "description": description, "enum": list(values)}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "description": description, "items": {"type": "string"}}


_REPO = {"owner": _s("Repository owner"), "repo": _s("Repository name")}
_PAGES = {
    "page": {**_n("Page number for pagination (min 1)"), "minimum": 1},
    "perPage": {**_n("Results per page for pagination (min 1, max 100)"), "minimum": 1},
}
_PR = {"pullNumber": _i("Pull request number")}
_ISSUE = {"issue_number": _i("Issue number")}


def _tool(
    description: str,
    properties: dict[str, Any],
    required: tuple[str, ...] = (),
    *,
    read_only: bool,
) -> ToolSchema:
    schema = {
        "type": "object",
        "properties": {**_REPO, **properties},
        "required": ["owner", "repo", *required],
    }
    return ToolSchema(description, schema, read_only)


#: the tools the GitHub MCP server has too, with its schemas: github_mcp_tools.json holds them
#: as its snapshots give them (generated from tests/github_mcp_toolsnaps)
_SHARED: dict[str, ToolSchema] = {
    name: ToolSchema(str(tool["description"]), dict(tool["inputSchema"]), bool(tool["readOnly"]))
    for name, tool in json.loads(
        Path(__file__).with_name("github_mcp_tools.json").read_text(encoding="utf-8")
    ).items()
}

#: the platform's own tools and the older names, with schemas of their own
_OWN: dict[str, ToolSchema] = {
    "get_pull_request": _tool(
        "Get details of a specific pull request", dict(_PR), ("pullNumber",), read_only=True
    ),
    "get_pull_request_files": _tool(
        "Get the files changed in a specific pull request",
        {**_PR, **_PAGES},
        ("pullNumber",),
        read_only=True,
    ),
    "get_pull_request_diff": _tool(
        "Get the diff of a pull request", dict(_PR), ("pullNumber",), read_only=True
    ),
    "get_pull_request_status": _tool(
        "Get the status of a specific pull request: the check runs of its head and their state",
        dict(_PR),
        ("pullNumber",),
        read_only=True,
    ),
    "get_issue": _tool(
        "Get details of a specific issue in a GitHub repository",
        dict(_ISSUE),
        ("issue_number",),
        read_only=True,
    ),
    "update_issue": _tool(
        "Update an existing issue in a GitHub repository",
        {
            **_ISSUE,
            "title": _s("New title"),
            "body": _s("New description"),
            "state": _e("New state", "open", "closed"),
            "labels": _strings("New labels"),
            "assignees": _strings("New assignees"),
            "milestone": _n("New milestone number"),
        },
        ("issue_number",),
        read_only=False,
    ),
    "list_workflow_runs": _tool(
        "List workflow runs for a specific workflow (or every workflow when none is named)",
        {
            "workflow_id": _s("The workflow ID or workflow file name"),
            "actor": _s("Returns someone's workflow runs"),
            "branch": _s("Returns workflow runs associated with a branch"),
            "event": _s("Returns workflow runs for a specific event type"),
            "status": _s("Returns workflow runs with the check run status"),
            **_PAGES,
        },
        read_only=True,
    ),
    "rerun_failed_jobs": _tool(
        "Re-run only the failed jobs of a workflow run (actions: write)",
        {"run_id": _i("The ID of the workflow run")},
        ("run_id",),
        read_only=False,
    ),
    "rerun_workflow_run": _tool(
        "Re-run every job of a workflow run, on the commit and workflow it ran with "
        "(actions: write)",
        {"run_id": _i("The ID of the workflow run")},
        ("run_id",),
        read_only=False,
    ),
    "rerun_failed_jobs_for_pr_head": _tool(
        "Re-run the failed jobs of every failed workflow run of a pull request's head commit "
        "(actions: write)",
        dict(_PR),
        ("pullNumber",),
        read_only=False,
    ),
    "actions_secret_list": _tool(
        "List the repository's Actions secrets: names and timestamps, never values",
        dict(_PAGES),
        read_only=True,
    ),
    "enable_pull_request_auto_merge": _tool(
        "Enable auto-merge on a pull request: GitHub merges it once its requirements are met",
        {**_PR, "merge_method": _e("Merge method", "merge", "squash", "rebase")},
        ("pullNumber",),
        read_only=False,
    ),
}

#: every tool hookspawn executes, by name
TOOL_SCHEMAS: dict[str, ToolSchema] = {**_SHARED, **_OWN}

#: the names hookspawn shares with the GitHub MCP server
SHARED_TOOLS = frozenset(_SHARED)
