"""The GitHub tools hookspawn executes, through githubkit, one function per tool.

Each is given the call (a githubkit client authenticated by a token scoped to that one call,
and the repository) and the tool's arguments, named as the GitHub MCP server names them. Each
answers what GitHub answered: decoded text for a file or a diff, else the JSON document. A
refusal by GitHub raises `GitHubToolFailed` with its status and message. The families live in
their own modules (contents, pulls, issues, actions); `EXECUTORS` is the whole table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from githubkit import GitHub

from workers.github.tools import actions, contents, issues, pulls
from workers.github.tools.arguments import Args, BadArguments
from workers.github.tools.request import GitHubToolFailed, ToolCall, token_client

__all__ = ["EXECUTORS", "BadArguments", "GitHubToolFailed", "run_tool", "token_client"]


EXECUTORS: dict[str, Callable[[ToolCall, Args], Any]] = {
    fn.__name__: fn
    for fn in (
        contents.get_file_contents,
        contents.list_branches,
        contents.list_commits,
        contents.get_commit,
        contents.list_tags,
        contents.get_tag,
        contents.list_releases,
        contents.get_latest_release,
        contents.get_release_by_tag,
        contents.get_repository_tree,
        contents.create_branch,
        contents.create_or_update_file,
        contents.delete_file,
        contents.push_files,
        pulls.pull_request_read,
        pulls.get_pull_request,
        pulls.get_pull_request_files,
        pulls.get_pull_request_diff,
        pulls.get_pull_request_status,
        pulls.list_pull_requests,
        pulls.create_pull_request,
        pulls.update_pull_request,
        pulls.update_pull_request_branch,
        pulls.pull_request_review_write,
        pulls.add_reply_to_pull_request_comment,
        pulls.request_copilot_review,
        pulls.merge_pull_request,
        pulls.enable_pull_request_auto_merge,
        issues.issue_read,
        issues.get_issue,
        issues.list_issues,
        issues.issue_write,
        issues.create_issue,
        issues.update_issue,
        issues.add_issue_comment,
        actions.actions_list,
        actions.actions_get,
        actions.list_workflow_runs,
        actions.actions_run_trigger,
        actions.rerun_failed_jobs,
        actions.rerun_workflow_run,
        actions.rerun_failed_jobs_for_pr_head,
        actions.actions_secret_list,
    )
}


def run_tool(github: GitHub[Any], tool: str, repository: str, args: Args) -> Any:
    """What GitHub answers `tool` on `repository`: text (a file, a diff) or a JSON document."""
    return EXECUTORS[tool](ToolCall(github, repository), args)
