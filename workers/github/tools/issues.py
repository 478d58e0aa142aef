"""The issue tools: reading, listing, opening, updating and commenting (with a reaction)."""

from __future__ import annotations

from typing import Any

from workers.github.tools.arguments import (
    Args,
    BadArguments,
    method_arg,
    not_taken,
    only_fields,
    optional_int,
    optional_str,
    pages,
    passed,
    required_int,
    required_str,
    strings,
)
from workers.github.tools.request import ToolCall


def issue_read(call: ToolCall, args: Args) -> Any:
    method, number = method_arg(args), required_int(args, "issue_number")
    if method == "get":
        return call.json("GET", ("issues", number))
    if method == "get_parent":
        return call.json("GET", ("issues", number, "parent"))
    tail = {"get_comments": "comments", "get_sub_issues": "sub_issues", "get_labels": "labels"}
    return call.json("GET", ("issues", number, tail[method]), params=pages(args))


def get_issue(call: ToolCall, args: Args) -> Any:
    return issue_read(call, {**args, "method": "get"})


def list_issues(call: ToolCall, args: Args) -> Any:
    """The GitHub MCP server's arguments (GraphQL's spelling) on GitHub's REST list: `after`
    is the page to read, as the previous answer's `pageInfo.endCursor` gave it."""
    not_taken(args, "field_filters")
    after = optional_str(args, "after")
    if after is not None and not after.isdigit():
        raise BadArguments("argument 'after' must be a pageInfo.endCursor", argument="after")
    page = int(after) if after else 1
    per_page = optional_int(args, "perPage") or 30
    state = str(args.get("state") or "all").lower()
    order = {"CREATED_AT": "created", "UPDATED_AT": "updated", "COMMENTS": "comments"}
    labels = strings(args, "labels")
    params = {
        "state": state,
        "sort": order.get(str(args.get("orderBy"))),
        "direction": str(args["direction"]).lower() if args.get("direction") else None,
        "since": optional_str(args, "since"),
        "labels": ",".join(labels) if labels else None,
        "page": page,
        "per_page": per_page,
    }
    found = call.json("GET", ("issues",), params=params)
    issues = only_fields(list(found or ()), args)
    more = len(issues) >= per_page
    return {
        "issues": issues,
        "pageInfo": {"hasNextPage": more, "endCursor": str(page + 1) if more else None},
    }


_ISSUE_FIELDS = ("title", "body", "assignees", "labels", "milestone")


def issue_write(call: ToolCall, args: Args) -> Any:
    not_taken(args, "issue_fields", "type")
    method = method_arg(args)
    if method == "create":
        body = {"title": required_str(args, "title"), **passed(args, *_ISSUE_FIELDS[1:])}
        return call.json("POST", ("issues",), json=body)
    body = passed(args, *_ISSUE_FIELDS, "state", "state_reason")
    duplicate = optional_int(args, "duplicate_of")
    number = required_int(args, "issue_number")
    if body.get("state_reason") == "duplicate" and duplicate is None:
        raise BadArguments(
            "argument 'duplicate_of' is required when state_reason is 'duplicate'",
            argument="duplicate_of",
        )
    updated = call.json("PATCH", ("issues", number), json=body)
    if duplicate is not None:
        text = f"Duplicate of #{duplicate}"
        call.json("POST", ("issues", number, "comments"), json={"body": text})
    return updated


def create_issue(call: ToolCall, args: Args) -> Any:
    return issue_write(call, {**passed(args, "title", "body"), "method": "create"})


def update_issue(call: ToolCall, args: Args) -> Any:
    return issue_write(call, {**args, "method": "update"})


def add_issue_comment(call: ToolCall, args: Args) -> Any:
    """A comment (`body`) on an issue or a pull request, and/or a reaction (`reaction`) to the
    issue itself or, with `comment_id`, to one of its comments."""
    number = required_int(args, "issue_number")
    body, reaction = optional_str(args, "body"), optional_str(args, "reaction")
    comment = optional_int(args, "comment_id")
    if not body and not reaction:
        raise BadArguments("give 'body', 'reaction' or both", argument="body")
    if body and comment is not None:
        raise BadArguments("'comment_id' names a comment to react to: no body with it")
    answer: Any = None
    if body:
        answer = call.json("POST", ("issues", number, "comments"), json={"body": body})
    if reaction:
        path = (
            ("issues", "comments", comment, "reactions")
            if comment is not None
            else ("issues", number, "reactions")
        )
        made = call.json("POST", path, json={"content": reaction})
        answer = made if answer is None else {"comment": answer, "reaction": made}
    return answer
