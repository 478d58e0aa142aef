"""The GitHub tool table: each brokered GitHub MCP tool → the mount capability and level it needs.

Mounts are the session's GitHub permission surface: a tool is visible only when some
`githubApp` mount grants its capability, and each call is re-checked against the target
repository's own mount, or, for a covered repository no mount names, against what
HOOKSPAWN_UNMOUNTED_CAPABILITIES grants there (`unmounted_capabilities`). Tool names are the
GitHub MCP server's (https://github.com/github/github-mcp-server) where it has a tool of the
same purpose; every tool in the table is one hookspawn executes, and a name not in it is never
allowed. A tool taking a `method` (`pull_request_read`, `actions_run_trigger`, …) is gated per
method (`METHODS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from agents.errors import AgentsError
from agents.model import CAPABILITY_FIELDS, Capabilities

__all__ = [
    "LEVEL_RANK",
    "METHODS",
    "NOT_EXECUTED",
    "TOOLS",
    "UNGRANTABLE_METHODS",
    "UNMOUNTED",
    "UNMOUNTED_SETTINGS",
    "MethodRefused",
    "ToolNeed",
    "UnmountedSetting",
    "capabilities_from_json",
    "grants",
    "level_covers",
    "method_need",
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
    #: capabilities the call also reads (rerun_failed_jobs_for_pr_head reads the pull request):
    #: added to its token at read where the target repository's grant includes them
    reads: tuple[str, ...] = ()

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


#: every tool hookspawn executes, and so every tool the gate knows; anything else is
#: `unknown_tool`. Names and arguments are today's GitHub MCP server's where it has a tool of
#: the same purpose; the platform's own names (the merges, the selected reruns, the secrets
#: list) and the older names hookspawn answered before the server renamed them
#: (`get_pull_request`, `get_issue`, …) are kept beside them.
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
            "pull_request_read",
            "list_pull_requests",
            "get_pull_request",
            "get_pull_request_files",
            "get_pull_request_diff",
        ),
        write=(
            "create_pull_request",
            "update_pull_request",
            "update_pull_request_branch",
            "pull_request_review_write",
            "add_reply_to_pull_request_comment",
            "request_copilot_review",
        ),
    ),
    **_family(
        "issues",
        "issues",
        read=("issue_read", "list_issues", "get_issue"),
        write=("issue_write", "create_issue", "update_issue", "add_issue_comment"),
    ),
    **_family("checks", "checks", read=("get_pull_request_status",), write=()),
    **_family(
        "actions",
        "actions",
        read=("actions_list", "actions_get", "list_workflow_runs"),
        write=(
            "actions_run_trigger",
            "rerun_failed_jobs",
            "rerun_failed_jobs_for_pr_head",
            "rerun_workflow_run",
        ),
    ),
    **_family("secrets", "secrets", read=("actions_secret_list",), write=()),
    **_family(
        "merge", "merge", read=(), write=("merge_pull_request", "enable_pull_request_auto_merge")
    ),
}

TOOLS["rerun_failed_jobs_for_pr_head"] = replace(
    TOOLS["rerun_failed_jobs_for_pr_head"], reads=("pull_requests",)
)

#: Actions mutations no capability grants: `actions: write` adds only the selected reruns
#: (a rerun repeats a run that already ran, on the commit and workflow it ran with), never
#: starting a workflow, cancelling a run or deleting its logs. GitHub authorizes all of them
#: with the same `actions: write`, so no mount level could grant them apart from the reruns.
UNGRANTABLE_METHODS = frozenset({"run_workflow", "cancel_workflow_run", "delete_workflow_run_logs"})

#: a tool taking a `method` argument: what each method needs on the target repository (the
#: tool's own need unless named here), and the methods hookspawn executes; a method of the
#: GitHub MCP server's enum not listed is refused `invalid_argument`, and one in
#: UNGRANTABLE_METHODS `tool_not_granted`
METHODS: dict[str, dict[str, ToolNeed]] = {
    "pull_request_read": {
        **{
            method: TOOLS["pull_request_read"]
            for method in (
                "get",
                "get_diff",
                "get_files",
                "get_commits",
                "get_review_comments",
                "get_reviews",
                "get_comments",
            )
        },
        "get_status": TOOLS["get_pull_request_status"],
        "get_check_runs": TOOLS["get_pull_request_status"],
    },
    "pull_request_review_write": {
        method: TOOLS["pull_request_review_write"]
        for method in ("create", "submit_pending", "delete_pending")
    },
    "issue_read": {
        method: TOOLS["issue_read"]
        for method in ("get", "get_comments", "get_sub_issues", "get_parent", "get_labels")
    },
    "issue_write": {method: TOOLS["issue_write"] for method in ("create", "update")},
    "actions_list": {
        method: TOOLS["actions_list"]
        for method in (
            "list_workflows",
            "list_workflow_runs",
            "list_workflow_jobs",
            "list_workflow_run_artifacts",
        )
    },
    "actions_get": {
        method: TOOLS["actions_get"]
        for method in (
            "get_workflow",
            "get_workflow_run",
            "get_workflow_job",
            "download_workflow_run_artifact",
            "get_workflow_run_usage",
            "get_workflow_run_logs_url",
        )
    },
    "actions_run_trigger": {
        method: TOOLS["actions_run_trigger"]
        for method in ("rerun_workflow_run", "rerun_failed_jobs")
    },
}


#: names an agent may still write that hookspawn does not execute, and what to use instead:
#: the GitHub MCP server's older names for tools it now has under a `method`, and what no
#: capability grants (`check` says so for a name in `allow`; a call of one is `unknown_tool`)
NOT_EXECUTED: dict[str, str] = {
    **{
        old: f"use {new} (method {method})"
        for old, (new, method) in {
            "list_workflows": ("actions_list", "list_workflows"),
            "list_workflow_jobs": ("actions_list", "list_workflow_jobs"),
            "list_workflow_run_artifacts": ("actions_list", "list_workflow_run_artifacts"),
            "get_workflow_run": ("actions_get", "get_workflow_run"),
            "get_workflow_run_usage": ("actions_get", "get_workflow_run_usage"),
            "get_workflow_run_logs": ("actions_get", "get_workflow_run_logs_url"),
            "download_workflow_run_artifact": ("actions_get", "download_workflow_run_artifact"),
            "get_pull_request_comments": ("pull_request_read", "get_review_comments"),
            "get_pull_request_reviews": ("pull_request_read", "get_reviews"),
            "create_and_submit_pull_request_review": ("pull_request_review_write", "create"),
            "create_pending_pull_request_review": ("pull_request_review_write", "create"),
            "submit_pending_pull_request_review": ("pull_request_review_write", "submit_pending"),
            "delete_pending_pull_request_review": ("pull_request_review_write", "delete_pending"),
            "get_issue_comments": ("issue_read", "get_comments"),
        }.items()
    },
    **{
        name: "no mount capability grants it: actions: write adds only the reruns "
        "(rerun_failed_jobs, rerun_failed_jobs_for_pr_head, rerun_workflow_run)"
        for name in UNGRANTABLE_METHODS
    },
    "actions_secret_write": "hookspawn does not write Actions secrets (GitHub takes them "
    "only encrypted to the repository's key)",
}


class MethodRefused(AgentsError):
    """A method the tool does not execute (`code`: invalid_argument) or no capability grants
    (`code`: tool_not_granted); the message names the tool, the method and why."""

    code = "invalid_argument"


def method_need(tool: str, method: object) -> ToolNeed:
    """What one call of `tool` needs on the target repository: the tool's own need, or for a
    tool taking a `method` the need of that method (MethodRefused when it has none)."""
    need = TOOLS[tool]
    methods = METHODS.get(tool)
    if methods is None:
        return need
    if isinstance(method, str) and method in methods:
        return methods[method]
    if method in UNGRANTABLE_METHODS:
        raise MethodRefused(
            f"{tool} method {method}: no mount capability grants it (actions: write adds only "
            "the reruns, rerun_failed_jobs and rerun_workflow_run)",
            code="tool_not_granted",
            tool=tool,
            method=method,
        )
    shown = ", ".join(methods)
    raise MethodRefused(
        f"{tool}: method {method!r} is not one hookspawn executes (one of {shown})",
        argument="method",
    )


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
    under `.github/workflows/` to a token without it. A tool that also reads another
    capability (`ToolNeed.reads`) gets it at read when `grant` includes it.

    Merging has no permission of its own on GitHub: it is authorized through contents and pull
    requests, both at write.
    """
    if need.capability == "merge":
        body = {"contents": "write", "pull_requests": "write", "metadata": "read"}
    else:
        permission = {attr: perm for attr, _, perm in CAPABILITY_FIELDS}[need.capability]
        assert permission is not None
        body = {permission: need.level, "metadata": "read"}
    for attr in need.reads:
        permission = {a: perm for a, _, perm in CAPABILITY_FIELDS}[attr]
        if grant is not None and permission and level_covers(str(getattr(grant, attr)), "read"):
            body.setdefault(permission, "read")
    writes_contents = body.get("contents") == "write"
    if writes_contents and grant is not None and grant.workflows == "write":
        body["workflows"] = "write"
    return body
