"""The pull request tools: reading, opening, updating, reviewing, merging and auto-merge."""

from __future__ import annotations

from typing import Any

from agents.github_tool_arguments import whole_number
from workers.github.tools.arguments import (
    Args,
    BadArguments,
    method_arg,
    number_given,
    only_fields,
    optional_int,
    optional_str,
    pages,
    passed,
    required_int,
    required_str,
    strings,
)
from workers.github.tools.request import GitHubToolFailed, ToolCall


def _check_runs(call: ToolCall, number: int) -> Any:
    """The check runs of the pull request's head, with their overall state: reading them
    takes `checks: read` (not commit statuses)."""
    found = call.json("GET", ("commits", "pull", number, "head", "check-runs"))
    runs = list(found.get("check_runs") or [])
    if any(r.get("status") != "completed" for r in runs):
        state = "pending"
    elif all(r.get("conclusion") in ("success", "neutral", "skipped") for r in runs):
        state = "success"
    else:
        state = "failure"
    return {"state": state, "total_count": found.get("total_count", len(runs)), "check_runs": runs}


def pull_request_read(call: ToolCall, args: Args) -> Any:
    method, number = method_arg(args), required_int(args, "pullNumber")
    if method == "get":
        return call.json("GET", ("pulls", number))
    if method == "get_diff":
        return call.send("GET", ("pulls", number), accept="application/vnd.github.diff").text
    if method in ("get_status", "get_check_runs"):
        return _check_runs(call, number)
    path = {
        "get_files": ("pulls", number, "files"),
        "get_commits": ("pulls", number, "commits"),
        "get_review_comments": ("pulls", number, "comments"),
        "get_reviews": ("pulls", number, "reviews"),
        "get_comments": ("issues", number, "comments"),
    }[method]
    return call.json("GET", path, params=pages(args))


def get_pull_request(call: ToolCall, args: Args) -> Any:
    return pull_request_read(call, {**args, "method": "get"})


def get_pull_request_files(call: ToolCall, args: Args) -> Any:
    return pull_request_read(call, {**args, "method": "get_files"})


def get_pull_request_diff(call: ToolCall, args: Args) -> Any:
    return pull_request_read(call, {**args, "method": "get_diff"})


def get_pull_request_status(call: ToolCall, args: Args) -> Any:
    return _check_runs(call, required_int(args, "pullNumber"))


def list_pull_requests(call: ToolCall, args: Args) -> Any:
    params = {**passed(args, "state", "head", "base", "sort", "direction"), **pages(args)}
    return only_fields(call.json("GET", ("pulls",), params=params), args)


def _request_reviewers(call: ToolCall, number: int, reviewers: list[str]) -> None:
    users = [r for r in reviewers if "/" not in r]
    teams = [r.partition("/")[2] for r in reviewers if "/" in r]
    body = {"reviewers": users, **({"team_reviewers": teams} if teams else {})}
    call.json("POST", ("pulls", number, "requested_reviewers"), json=body)


def create_pull_request(call: ToolCall, args: Args) -> Any:
    body = {
        "title": required_str(args, "title"),
        "head": required_str(args, "head"),
        "base": required_str(args, "base"),
        **passed(args, "body", "draft", "maintainer_can_modify"),
    }
    made = call.json("POST", ("pulls",), json=body)
    reviewers = strings(args, "reviewers")
    if reviewers:
        _request_reviewers(call, int(made["number"]), reviewers)
        made = call.json("GET", ("pulls", int(made["number"])))
    return made


def update_pull_request(call: ToolCall, args: Args) -> Any:
    number = required_int(args, "pullNumber")
    body = passed(args, "title", "body", "state", "base", "maintainer_can_modify", "draft")
    updated = call.json("PATCH", ("pulls", number), json=body) if body else None
    reviewers = strings(args, "reviewers")
    if reviewers:
        _request_reviewers(call, number, reviewers)
        updated = None
    return updated if updated is not None else call.json("GET", ("pulls", number))


def update_pull_request_branch(call: ToolCall, args: Args) -> Any:
    body = {"expected_head_sha": args["expectedHeadSha"]} if args.get("expectedHeadSha") else {}
    return call.json("PUT", ("pulls", required_int(args, "pullNumber"), "update-branch"), json=body)


def _pending_review(call: ToolCall, number: int) -> int:
    """The id of the pull request's pending review (the token's own; GitHub shows a pending
    review to its author only)."""
    reviews = call.json("GET", ("pulls", number, "reviews"), params={"per_page": 100})
    pending = [r for r in reviews or () if isinstance(r, dict) and r.get("state") == "PENDING"]
    if not pending:
        raise GitHubToolFailed(f"pull request #{number} has no pending review", status=404)
    return int(pending[-1]["id"])


def pull_request_review_write(call: ToolCall, args: Args) -> Any:
    """`create` (with an `event`: submitted; without: pending), `submit_pending`,
    `delete_pending`; the review threads' methods are GraphQL's and refused."""
    method, number = method_arg(args), required_int(args, "pullNumber")
    if method == "create":
        body = {
            **passed(args, "body", "event"),
            **({"commit_id": args["commitID"]} if args.get("commitID") else {}),
        }
        return call.json("POST", ("pulls", number, "reviews"), json=body)
    review = _pending_review(call, number)
    if method == "submit_pending":
        body = {"event": required_str(args, "event"), **passed(args, "body")}
        return call.json("POST", ("pulls", number, "reviews", review, "events"), json=body)
    return call.json("DELETE", ("pulls", number, "reviews", review))


def add_reply_to_pull_request_comment(call: ToolCall, args: Args) -> Any:
    """A reply to a review comment (`body`) and/or a reaction to it (`reaction`)."""
    comment = required_int(args, "commentId")
    body, reaction = optional_str(args, "body"), optional_str(args, "reaction")
    if not body and not reaction:
        raise BadArguments("give 'body', 'reaction' or both", argument="body")
    answer: dict[str, Any] = {}
    if body:
        number = optional_int(args, "pullNumber")
        if number is None:
            found = call.json("GET", ("pulls", "comments", comment))
            url = str(found.get("pull_request_url") or "")
            number = whole_number(number_given(url.rpartition("/")[2]), "pullNumber")
        path: tuple[str | int, ...] = ("pulls", number, "comments", comment, "replies")
        answer["reply"] = call.json("POST", path, json={"body": body})
    if reaction:
        path = ("pulls", "comments", comment, "reactions")
        answer["reaction"] = call.json("POST", path, json={"content": reaction})
    return answer


def request_copilot_review(call: ToolCall, args: Args) -> Any:
    number = required_int(args, "pullNumber")
    _request_reviewers(call, number, ["copilot-pull-request-reviewer[bot]"])
    return {"message": "Copilot review requested", "pullNumber": number}


def merge_pull_request(call: ToolCall, args: Args) -> Any:
    body = passed(args, "commit_title", "commit_message", "merge_method")
    return call.json("PUT", ("pulls", required_int(args, "pullNumber"), "merge"), json=body)


_AUTO_MERGE = (
    "mutation($id: ID!, $method: PullRequestMergeMethod) {"
    " enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method}) {"
    " pullRequest { number autoMergeRequest { mergeMethod enabledAt } } } }"
)


def enable_pull_request_auto_merge(call: ToolCall, args: Args) -> Any:
    """GitHub enables auto-merge through GraphQL only: the pull request's node id from REST,
    then the mutation."""
    method = str(args.get("merge_method") or "merge")
    if method not in ("merge", "squash", "rebase"):
        raise BadArguments("argument 'merge_method' must be merge, squash or rebase")
    pull = call.json("GET", ("pulls", required_int(args, "pullNumber")))
    variables = {"id": pull["node_id"], "method": method.upper()}
    return call.graphql(_AUTO_MERGE, variables)["enablePullRequestAutoMerge"]
