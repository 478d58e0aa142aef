"""The GitHub tool table: each brokered GitHub MCP tool → the mount capability and level it needs.

Mounts are the session's GitHub permission surface: a tool is visible only when some
`githubApp` mount grants its capability, and each call is re-checked against the target
repository's own mount, or, for a covered repository no mount names, against what
HOOKSPAWN_UNMOUNTED_CAPABILITIES grants there (`unmounted_capabilities`). Tool names are the
GitHub MCP server's (https://github.com/github/github-mcp-server); a name not in the table is
never allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from agents.model import CAPABILITY_FIELDS, Capabilities

__all__ = [
    "LEVEL_RANK",
    "TOOLS",
    "UNMOUNTED",
    "UNMOUNTED_SETTINGS",
    "ToolNeed",
    "UnmountedSetting",
    "capabilities_from_json",
    "grants",
    "level_covers",
    "tool_token_permissions",
    "union",
    "unmounted_capabilities",
    "unmounted_tools",
    "visible_tools",
]

Level = Literal["read", "write"]
#: GitHub's permission levels, weakest first: a grant at one level includes the ones before it
LEVEL_RANK = {"none": 0, "read": 1, "write": 2, "admin": 3}


def level_covers(have: str, need: str) -> bool:
    """Whether a grant at level `have` includes level `need` (an unknown level: none)."""
    return LEVEL_RANK.get(have, 0) >= LEVEL_RANK.get(need, 0)


def union(mounted: Iterable[Capabilities]) -> Capabilities:
    """One repository mounted more than once: each capability at the highest level any of
    its mounts grants (the session holds each of them on that repository already); no mount
    at all grants nothing."""
    found = list(mounted)
    if not found:
        return Capabilities(
            contents="none", pull_requests="none", issues="none", checks="none", actions="none"
        )
    levels: dict[str, Any] = {
        attr: max((str(getattr(caps, attr)) for caps in found), key=LEVEL_RANK.__getitem__)
        for attr, _, _ in CAPABILITY_FIELDS
    }
    return Capabilities(**levels)


@dataclass(frozen=True)
class ToolNeed:
    """What one tool needs: `capability` (a Capabilities attribute) at `level` or better."""

    family: str
    capability: str
    level: Level

    @property
    def text(self) -> str:
        key = {attr: key for attr, key, _ in CAPABILITY_FIELDS}[self.capability]
        return f"{key}: {self.level}" + (" or write" if self.level == "read" else "")


def _family(
    family: str, capability: str, read: Iterable[str], write: Iterable[str]
) -> dict[str, ToolNeed]:
    table = {name: ToolNeed(family, capability, "read") for name in read}
    table.update({name: ToolNeed(family, capability, "write") for name in write})
    return table


#: every brokered tool; anything else is `unknown_tool`
TOOLS: dict[str, ToolNeed] = {
    **_family(
        "contents",
        "contents",
        read=(
            "get_file_contents",
            "list_branches",
            "list_commits",
            "get_commit",
            "list_tags",
            "get_tag",
            "list_releases",
            "get_latest_release",
            "get_release_by_tag",
            "get_repository_tree",
        ),
        write=("create_or_update_file", "delete_file", "push_files", "create_branch"),
    ),
    **_family(
        "pull requests",
        "pull_requests",
        read=(
            "get_pull_request",
            "list_pull_requests",
            "get_pull_request_files",
            "get_pull_request_diff",
            "get_pull_request_comments",
            "get_pull_request_reviews",
            "pull_request_read",
        ),
        write=(
            "create_pull_request",
            "update_pull_request",
            "update_pull_request_branch",
            "create_and_submit_pull_request_review",
            "create_pending_pull_request_review",
            "add_comment_to_pending_review",
            "submit_pending_pull_request_review",
            "delete_pending_pull_request_review",
            "add_reply_to_pull_request_comment",
            "request_copilot_review",
            "pull_request_review_write",
        ),
    ),
    **_family(
        "issues",
        "issues",
        read=(
            "get_issue",
            "list_issues",
            "get_issue_comments",
            "issue_read",
            "list_issue_types",
            "list_issue_fields",
        ),
        write=(
            "create_issue",
            "update_issue",
            "add_issue_comment",
            "issue_write",
            "add_sub_issue",
            "remove_sub_issue",
            "reprioritize_sub_issue",
            "sub_issue_write",
        ),
    ),
    **_family("checks", "checks", read=("get_pull_request_status",), write=()),
    **_family(
        "actions",
        "actions",
        read=(
            "list_workflows",
            "list_workflow_runs",
            "get_workflow_run",
            "get_workflow_run_logs",
            "get_workflow_run_usage",
            "list_workflow_jobs",
            "get_job_logs",
            "list_workflow_run_artifacts",
            "download_workflow_run_artifact",
            "actions_list",
            "actions_get",
        ),
        write=(
            "run_workflow",
            "rerun_workflow_run",
            "rerun_failed_jobs",
            "rerun_failed_jobs_for_pr_head",
            "cancel_workflow_run",
            "delete_workflow_run_logs",
            "actions_run_trigger",
        ),
    ),
    **_family("secrets", "secrets", read=("actions_secret_list",), write=("actions_secret_write",)),
    **_family(
        "merge", "merge", read=(), write=("merge_pull_request", "enable_pull_request_auto_merge")
    ),
}

#: what a covered repository no mount names gets through the proxy under the `default`
#: setting: the default capabilities, with merge and secrets always denied
UNMOUNTED = replace(Capabilities(), merge="none", secrets="none")

#: the values of HOOKSPAWN_UNMOUNTED_CAPABILITIES, widest first
UNMOUNTED_SETTINGS = ("default", "read", "none")
UnmountedSetting = Literal["default", "read", "none"]

_UNMOUNTED_READ = Capabilities(
    contents="read",
    pull_requests="read",
    issues="read",
    checks="read",
    actions="read",
    workflows="none",
    secrets="none",
    merge="none",
)


def unmounted_capabilities(setting: str) -> Capabilities | None:
    """What the tool gate grants on a covered repository no mount names: `default`, the
    default capabilities (merge and secrets denied); `read`, each capability at most read
    (workflows, merge and secrets denied); `none`, nothing (None: every call refused)."""
    if setting == "default":
        return UNMOUNTED
    if setting == "read":
        return _UNMOUNTED_READ
    if setting == "none":
        return None
    raise ValueError(f"not an unmounted-capabilities setting: {setting!r} (default, read, none)")


def unmounted_tools(
    mounts: Iterable[Capabilities], allow: Iterable[str] | None, setting: str
) -> list[str]:
    """The tools a session may call on a repository no mount names: those it sees (some
    `githubApp` mount grants each, narrowed by the allowlist) that the setting grants too."""
    granted = unmounted_capabilities(setting)
    if granted is None:
        return []
    return [name for name in visible_tools(mounts, allow) if grants(granted, TOOLS[name])]


def capabilities_from_json(value: object) -> Capabilities:
    """A stored mount's `capabilities` (camelCase keys) → Capabilities; absent keys default."""
    data = value if isinstance(value, dict) else {}
    levels = {attr: data[key] for attr, key, _ in CAPABILITY_FIELDS if key in data}
    return Capabilities(**levels)


def grants(capabilities: Capabilities, need: ToolNeed) -> bool:
    """Whether a mount's capabilities allow a tool."""
    have = str(getattr(capabilities, need.capability))
    return level_covers(have, need.level)


def visible_tools(mounts: Iterable[Capabilities], allow: Iterable[str] | None) -> list[str]:
    """Session-level visibility: tools some mount grants, narrowed by the `tools` allowlist."""
    granted = list(mounts)
    allowed = set(allow) if allow is not None else None
    return sorted(
        name
        for name, need in TOOLS.items()
        if any(grants(caps, need) for caps in granted) and (allowed is None or name in allowed)
    )


def tool_token_permissions(need: ToolNeed, grant: Capabilities | None = None) -> dict[str, str]:
    """The installation-token permissions one call of a tool gets: its own capability only,
    plus `workflows: write` for a call that writes contents (the contents family's writes and
    merging) when `grant`, the target repository's, includes it: GitHub refuses a change
    under `.github/workflows/` to a token without it.

    Merging has no permission of its own on GitHub: it is authorized through contents and pull
    requests, both at write.
    """
    if need.capability == "merge":
        body = {"contents": "write", "pull_requests": "write", "metadata": "read"}
    else:
        permission = {attr: perm for attr, _, perm in CAPABILITY_FIELDS}[need.capability]
        assert permission is not None
        body = {permission: need.level, "metadata": "read"}
    writes_contents = body.get("contents") == "write"
    if writes_contents and grant is not None and grant.workflows == "write":
        body["workflows"] = "write"
    return body
