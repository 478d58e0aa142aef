"""The GitHub tool arguments that become part of a REST path: checked, then encoded one path
segment at a time (pure).

A tool call's path arguments (the repository's owner and name, a file path, a branch, a
number, a workflow) are refused before anything is minted or sent when they could leave the
tool's own endpoint: a `.` or `..` segment, an empty segment, a leading `/`, a backslash, a
control character, a branch git would not accept as a ref name. What is accepted is encoded
segment by segment (`quote(safe="")`), so `?`, `#`, `%` and an encoded slash stay characters
of that one segment; the separators between segments are the only `/` the path gets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import quote

from agents.errors import AgentsError
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


Kind = Literal["file", "directory", "branch", "number", "workflow"]

#: each executed tool's arguments that become part of its REST path, and what each must be
#: (`owner` and `repo` are every tool's)
PATH_ARGUMENTS: dict[str, dict[str, Kind]] = {
    "get_file_contents": {"path": "directory"},
    "create_branch": {"branch": "branch", "from_branch": "branch"},
    "create_or_update_file": {"path": "file", "branch": "branch"},
    "push_files": {"branch": "branch"},
    "get_pull_request": {"pullNumber": "number"},
    "get_pull_request_files": {"pullNumber": "number"},
    "get_pull_request_diff": {"pullNumber": "number"},
    "get_pull_request_status": {"pullNumber": "number"},
    "update_pull_request": {"pullNumber": "number"},
    "pull_request_review_write": {"pullNumber": "number"},
    "merge_pull_request": {"pullNumber": "number"},
    "get_issue": {"issue_number": "number"},
    "update_issue": {"issue_number": "number"},
    "add_issue_comment": {"issue_number": "number"},
    "list_workflow_runs": {"workflow_id": "workflow"},
    "run_workflow": {"workflow_id": "workflow"},
}

#: an argument optional to its tool: absent (or null) is fine, anything given is checked
_OPTIONAL = {
    ("get_file_contents", "path"),
    ("create_branch", "from_branch"),
    ("list_workflow_runs", "workflow_id"),
}


def _check(kind: Kind, value: object, name: str) -> None:
    if kind == "file":
        repository_path(value, name)
    elif kind == "directory":
        repository_path(value, name, directory=True)
    elif kind == "branch":
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
    return f"{owner}/{repo}"


def _items(value: object) -> Iterable[object]:
    return value if isinstance(value, list) else ()
