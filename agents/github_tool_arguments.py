"""The GitHub tool arguments that become part of a REST path: checked, then encoded one path
segment at a time (pure).

A tool call's path arguments (the repository's owner and name, a file path, a branch, a tag or
commit, a number, a workflow) are refused before anything is minted or sent when they could
leave the tool's own endpoint: a `.` or `..` segment, an empty segment, a leading `/`, a
backslash, a control character, a branch git would not accept as a ref name. What is accepted
is encoded segment by segment (`quote(safe="")`), so `?`, `#`, `%` and an encoded slash stay
characters of that one segment; the separators between segments are the only `/` the path
gets. The `method` of a tool taking one is checked here too: one hookspawn does not execute is
refused the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import quote

from agents.errors import AgentsError
from agents.github_tools import METHODS, UNGRANTABLE_METHODS, MethodRefused, method_need
from agents.mounts import NAME, OWNER
from templating.errors import InvalidRefError
from templating.refs import check_ref

__all__ = [
    "PATH_ARGUMENTS",
    "InvalidToolArgument",
    "branch_segments",
    "check_path_arguments",
    "encoded_path",
    "repository_name",
    "repository_path",
    "segment",
    "whole_number",
    "workflow",
]

#: the most bytes of UTF-8 a repository path may take (GitHub's own limit is about 4 KiB)
MAX_PATH_BYTES = 4096
#: a repository's owner and name as a mount may write them (agents.mounts)
_OWNER = re.compile(rf"^{OWNER}$")
_REPO = re.compile(rf"^{NAME}$")
_DIGITS = re.compile(r"^[0-9]{1,19}$")


class InvalidToolArgument(AgentsError):
    """A tool argument that cannot be used: names the argument and why (`argument`)."""

    code = "invalid_argument"


def _refuse(name: str, value: object, why: str) -> InvalidToolArgument:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:79] + "…"
    return InvalidToolArgument(f"argument {name!r} ({shown}) {why}", argument=name)


def _control(text: str) -> str | None:
    """The first control, format or surrogate character of `text`, as U+XXXX; else None."""
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs"):
            return f"U+{ord(char):04X}"
    return None


def segment(text: str) -> str:
    """One path segment, percent-encoded whole (`/`, `?`, `#`, `%` included). A segment that
    is empty, `.` or `..` would change the path around it: ValueError (a caller checks its
    arguments first, so this only stops what GitHub itself answered)."""
    if text in ("", ".", ".."):
        raise ValueError(f"{text!r} cannot be a path segment")
    return quote(text, safe="")


def encoded_path(*segments: str | int) -> str:
    """`/a/b/c` from segments, each encoded by itself (a number as its digits)."""
    return "".join("/" + (str(s) if isinstance(s, int) else segment(s)) for s in segments)


def repository_name(value: object, name: Literal["owner", "repo"]) -> str:
    """A repository's owner (a GitHub login) or name, as GitHub spells them."""
    pattern = _OWNER if name == "owner" else _REPO
    what = "a repository owner" if name == "owner" else "a repository name"
    if not isinstance(value, str) or not value:
        raise _refuse(name, value, f"must be {what}: a non-empty string")
    if value in (".", "..") or not pattern.match(value):
        allowed = (
            "letters, digits and '-', not starting with '-'"
            if name == "owner"
            else "letters, digits, '-', '_' and '.', not '.' or '..'"
        )
        raise _refuse(name, value, f"is not {what} ({allowed}; no '/')")
    return value


def repository_path(value: object, name: str, *, directory: bool = False) -> tuple[str, ...]:
    """A path inside the repository → its segments. No `.` or `..` segment, no empty segment
    (`a//b`), no leading `/`, no backslash, no control character. `directory`: a directory
    may end with one `/`, and `/` alone is the repository's root (no segments)."""
    if not isinstance(value, str):
        raise _refuse(name, value, "must be a string: a path inside the repository")
    text = value
    if directory:
        if text == "/":
            return ()
        text = text.removesuffix("/")
    if not text:
        raise _refuse(name, value, "is empty: name a path inside the repository")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise _refuse(name, value, f"is longer than {MAX_PATH_BYTES} bytes")
    control = _control(text)
    if control is not None:
        raise _refuse(name, value, f"contains the control character {control}")
    if "\\" in text:
        raise _refuse(name, value, "contains a backslash: paths are separated by '/'")
    if text.startswith("/"):
        raise _refuse(name, value, "starts with '/': paths are relative to the repository root")
    parts = tuple(text.split("/"))
    if any(part == "" for part in parts):
        raise _refuse(name, value, "has an empty segment ('//' or a trailing '/')")
    for part in parts:
        if part in (".", ".."):
            raise _refuse(name, value, f"has a {part!r} segment: a path stays in the repository")
    return parts


def branch_segments(value: object, name: str) -> tuple[str, ...]:
    """A branch name (git's ref rules, templating.refs) → its segments."""
    if not isinstance(value, str) or not value:
        raise _refuse(name, value, "must be a branch name: a non-empty string")
    try:
        check_ref(value)
    except InvalidRefError as exc:
        raise _refuse(name, value, f"is not a branch name git accepts: {exc.reason}") from None
    return tuple(value.split("/"))


def whole_number(value: object, name: str) -> int:
    """A number that names something (a pull request, an issue): a whole number, 1 or more."""
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise _refuse(name, value, "must be a whole number")
    if value < 1:
        raise _refuse(name, value, "must be 1 or more")
    return int(value)


def workflow(value: object, name: str) -> int | str:
    """A workflow: its id (a whole number, or its digits) or its file name (`ci.yml`) — one
    segment, no `/`."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return whole_number(value, name)
    if not isinstance(value, str) or not value:
        raise _refuse(name, value, "must be a workflow id or a workflow file name")
    if _DIGITS.match(value):
        return whole_number(int(value), name)
    control = _control(value)
    if control is not None:
        raise _refuse(name, value, f"contains the control character {control}")
    if "/" in value or "\\" in value:
        raise _refuse(name, value, "must be a workflow file name alone (no '/' or '\\')")
    if value.startswith(".") or not value.endswith((".yml", ".yaml")):
        raise _refuse(name, value, "must be a workflow id or a file name ending .yml or .yaml")
    return value


Kind = Literal["file", "directory", "branch", "ref", "number", "workflow"]

_PULL: dict[str, Kind] = {"pullNumber": "number"}
_ISSUE: dict[str, Kind] = {"issue_number": "number"}
_RUN: dict[str, Kind] = {"run_id": "number"}

#: each executed tool's arguments that become part of its REST path, and what each must be
#: (`owner` and `repo` are every tool's; `resource_id` of actions_list and actions_get depends
#: on the method, see `_resource`)
PATH_ARGUMENTS: dict[str, dict[str, Kind]] = {
    "get_file_contents": {"path": "directory"},
    "get_commit": {"sha": "ref"},
    "get_tag": {"tag": "ref"},
    "get_release_by_tag": {"tag": "ref"},
    "get_repository_tree": {"tree_sha": "ref"},
    "create_branch": {"branch": "branch", "from_branch": "branch"},
    "create_or_update_file": {"path": "file", "branch": "branch"},
    "delete_file": {"path": "file", "branch": "branch"},
    "push_files": {"branch": "branch"},
    "pull_request_read": _PULL,
    "get_pull_request": _PULL,
    "get_pull_request_files": _PULL,
    "get_pull_request_diff": _PULL,
    "get_pull_request_status": _PULL,
    "update_pull_request": _PULL,
    "update_pull_request_branch": _PULL,
    "pull_request_review_write": _PULL,
    "add_reply_to_pull_request_comment": {"commentId": "number", "pullNumber": "number"},
    "request_copilot_review": _PULL,
    "merge_pull_request": _PULL,
    "enable_pull_request_auto_merge": _PULL,
    "issue_read": _ISSUE,
    "get_issue": _ISSUE,
    "issue_write": _ISSUE,
    "update_issue": _ISSUE,
    "add_issue_comment": {**_ISSUE, "comment_id": "number"},
    "list_workflow_runs": {"workflow_id": "workflow"},
    "actions_run_trigger": _RUN,
    "rerun_failed_jobs": _RUN,
    "rerun_workflow_run": _RUN,
    "rerun_failed_jobs_for_pr_head": _PULL,
}

#: an argument optional to its tool: absent (or null) is fine, anything given is checked
_OPTIONAL = {
    ("get_file_contents", "path"),
    ("get_repository_tree", "tree_sha"),
    ("create_branch", "from_branch"),
    ("add_reply_to_pull_request_comment", "pullNumber"),
    ("issue_write", "issue_number"),
    ("add_issue_comment", "comment_id"),
    ("list_workflow_runs", "workflow_id"),
    ("actions_run_trigger", "run_id"),
}

#: `resource_id` of the Actions tools by method: a workflow (its id or file name), or a
#: number (a run, a job, an artifact); None: the method takes none
_RESOURCE: dict[str, Kind | None] = {
    "list_workflows": None,
    "list_workflow_runs": "workflow",
    "get_workflow": "workflow",
}


def _check(kind: Kind, value: object, name: str) -> None:
    if kind == "file":
        repository_path(value, name)
    elif kind == "directory":
        repository_path(value, name, directory=True)
    elif kind in ("branch", "ref"):
        branch_segments(value, name)
    elif kind == "number":
        whole_number(value, name)
    else:
        workflow(value, name)


def check_path_arguments(tool: str, arguments: Mapping[str, Any]) -> str:
    """Every argument of `tool` that becomes part of a REST path, checked (the repository's
    owner and name first, then the tool's own; push_files' file paths too, which name paths
    in the repository); the repository `owner/name`. InvalidToolArgument names the first
    argument refused and why."""
    owner = repository_name(arguments.get("owner"), "owner")
    repo = repository_name(arguments.get("repo"), "repo")
    for name, kind in PATH_ARGUMENTS.get(tool, {}).items():
        value = arguments.get(name)
        if value is None and (tool, name) in _OPTIONAL:
            continue
        _check(kind, value, name)
    if tool == "push_files":
        for n, item in enumerate(_items(arguments.get("files"))):
            if isinstance(item, Mapping):
                repository_path(item.get("path"), f"files[{n}].path")
    if tool in METHODS:
        method = arguments.get("method")
        if method not in METHODS[tool] and method not in UNGRANTABLE_METHODS:
            try:
                method_need(tool, method)
            except MethodRefused as exc:  # names the methods the tool executes
                raise InvalidToolArgument(exc.message, argument="method") from None
        if tool in ("actions_list", "actions_get"):
            _resource(str(method), arguments.get("resource_id"))
    return f"{owner}/{repo}"


def _resource(method: str, value: object) -> None:
    """An Actions tool's `resource_id` (the GitHub MCP server passes it as a string)."""
    kind = _RESOURCE.get(method, "number")
    if kind is None or (kind == "workflow" and method == "list_workflow_runs" and not value):
        return
    if isinstance(value, str) and _DIGITS.match(value):
        value = int(value)
    _check(kind, value, "resource_id")


def _items(value: object) -> Iterable[object]:
    return value if isinstance(value, list) else ()
