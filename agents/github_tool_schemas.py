"""The input schemas of the GitHub tools hookspawn executes, as the GitHub MCP server names them.

Argument names and shapes follow https://github.com/github/github-mcp-server (pkg/github:
repositories.go, pullrequests.go, issues.go, actions.go), so a harness written for that server
calls hookspawn's the same way. Only tools listed here are executed; the rest of the tool table
(agents.github_tools) stays a gate decision without an executor and is never listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TOOL_SCHEMAS", "ToolSchema"]


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


#: every tool hookspawn executes, by its GitHub MCP server name
TOOL_SCHEMAS: dict[str, ToolSchema] = {
    "get_file_contents": _tool(
        "Get the contents of a file or directory from a GitHub repository",
        {
            "path": {
                **_s(
                    "Path to file/directory (directories must end with a slash '/'), relative "
                    "to the repository root: no '.' or '..' segment, no empty segment, no "
                    "backslash"
                ),
                "default": "/",
            },
            "ref": _s(
                "Accepts optional git refs such as `refs/tags/{tag}`, `refs/heads/{branch}` "
                "or `refs/pull/{pr_number}/head`"
            ),
            "sha": _s("Accepts optional commit SHA. If specified, it will be used instead of ref"),
        },
        read_only=True,
    ),
    "list_branches": _tool("List branches in a GitHub repository", dict(_PAGES), read_only=True),
    "list_commits": _tool(
        "Get list of commits of a branch in a GitHub repository",
        {
            "sha": _s("Commit SHA, branch or tag name to list commits of"),
            "author": _s("Author username or email address to filter commits by"),
            **_PAGES,
        },
        read_only=True,
    ),
    "create_branch": _tool(
        "Create a new branch in a GitHub repository",
        {
            "branch": _s("Name for new branch"),
            "from_branch": _s("Source branch (defaults to repo default)"),
        },
        ("branch",),
        read_only=False,
    ),
    "create_or_update_file": _tool(
        "Create or update a single file in a GitHub repository",
        {
            "path": _s(
                "Path where to create/update the file, relative to the repository root (no "
                "leading '/', no '.' or '..' segment)"
            ),
            "content": _s("Content of the file"),
            "message": _s("Commit message"),
            "branch": _s("Branch to create/update the file in"),
            "sha": _s("The blob SHA of the file being replaced (required for updates)"),
        },
        ("path", "content", "message", "branch"),
        read_only=False,
    ),
    "push_files": _tool(
        "Push multiple files to a GitHub repository in a single commit",
        {
            "branch": _s("Branch to push to"),
            "files": {
                "type": "array",
                "description": "Array of file objects to push, each object with path (string) "
                "and content (string)",
                "items": {
                    "type": "object",
                    "properties": {"path": _s("path to the file"), "content": _s("file content")},
                    "required": ["path", "content"],
                    "additionalProperties": False,
                },
            },
            "message": _s("Commit message"),
        },
        ("branch", "files", "message"),
        read_only=False,
    ),
    "get_pull_request": _tool(
        "Get details of a specific pull request", dict(_PR), ("pullNumber",), read_only=True
    ),
    "list_pull_requests": _tool(
        "List pull requests in a GitHub repository",
        {
            "state": _e("Filter by state", "open", "closed", "all"),
            "head": _s("Filter by head user/org and branch"),
            "base": _s("Filter by base branch"),
            "sort": _e("Sort by", "created", "updated", "popularity", "long-running"),
            "direction": _e("Sort direction", "asc", "desc"),
            **_PAGES,
        },
        read_only=True,
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
    "create_pull_request": _tool(
        "Create a new pull request in a GitHub repository",
        {
            "title": _s("PR title"),
            "body": _s("PR description"),
            "head": _s("Branch containing changes"),
            "base": _s("Branch to merge into"),
            "draft": _b("Create as draft PR"),
            "maintainer_can_modify": _b("Allow maintainer edits"),
        },
        ("title", "head", "base"),
        read_only=False,
    ),
    "update_pull_request": _tool(
        "Update an existing pull request in a GitHub repository",
        {
            **_PR,
            "title": _s("New title"),
            "body": _s("New description"),
            "state": _e("New state", "open", "closed"),
            "base": _s("New base branch name"),
            "maintainer_can_modify": _b("Allow maintainer edits"),
            "reviewers": _strings("GitHub usernames to request reviews from"),
        },
        ("pullNumber",),
        read_only=False,
    ),
    "pull_request_review_write": _tool(
        "Create and submit a review of a pull request (method `create` with an `event`)",
        {
            "method": _e("The write operation to perform on pull request review", "create"),
            **_PR,
            "body": _s("Review comment text"),
            "event": _e("Review action to perform", "APPROVE", "REQUEST_CHANGES", "COMMENT"),
            "commitID": _s("SHA of commit to review"),
        },
        ("method", "pullNumber"),
        read_only=False,
    ),
    "merge_pull_request": _tool(
        "Merge a pull request in a GitHub repository",
        {
            **_PR,
            "commit_title": _s("Title for merge commit"),
            "commit_message": _s("Extra detail for merge commit"),
            "merge_method": _e("Merge method", "merge", "squash", "rebase"),
        },
        ("pullNumber",),
        read_only=False,
    ),
    "get_issue": _tool(
        "Get details of a specific issue in a GitHub repository",
        dict(_ISSUE),
        ("issue_number",),
        read_only=True,
    ),
    "list_issues": _tool(
        "List issues in a GitHub repository",
        {
            "state": _e("Filter by state", "open", "closed", "all"),
            "labels": _strings("Filter by labels"),
            "since": _s("Filter by date (ISO 8601 timestamp)"),
            "direction": _e("Order direction", "asc", "desc"),
            **_PAGES,
        },
        read_only=True,
    ),
    "create_issue": _tool(
        "Create a new issue in a GitHub repository",
        {
            "title": _s("Issue title"),
            "body": _s("Issue body content"),
            "assignees": _strings("Usernames to assign to this issue"),
            "labels": _strings("Labels to apply to this issue"),
            "milestone": _n("Milestone number"),
        },
        ("title",),
        read_only=False,
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
    "add_issue_comment": _tool(
        "Add a comment to a specific issue or pull request in a GitHub repository",
        {**_ISSUE, "body": _s("Comment content")},
        ("issue_number", "body"),
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
    "run_workflow": _tool(
        "Run an Actions workflow by workflow ID or filename",
        {
            "workflow_id": _s(
                "The workflow ID (numeric) or workflow file name (e.g., main.yml), without '/'"
            ),
            "ref": _s("The git reference for the workflow. The reference can be a branch or tag"),
            "inputs": {"type": "object", "description": "Inputs the workflow accepts"},
        },
        ("workflow_id", "ref"),
        read_only=False,
    ),
}
