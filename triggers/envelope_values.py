"""Reading an envelope (pure): path lookup, strict JSON equality, the event's branch.

Also the short renderings of values that a decision's detail shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["MISSING", "event_branch", "json_equal", "listed", "lookup", "show_value"]

# Events whose branch is the pull request's base branch.
_PULL_REQUEST_EVENTS = frozenset(
    {
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "pull_request_review_thread",
        "pull_request_target",
    }
)
# Events whose branch is a head branch field of their main object.
_HEAD_BRANCH: Mapping[str, tuple[str, ...]] = {
    "check_run": ("checkRun", "checkSuite", "headBranch"),
    "check_suite": ("checkSuite", "headBranch"),
    "workflow_run": ("workflowRun", "headBranch"),
    "workflow_job": ("workflowJob", "headBranch"),
}
_HEADS = "refs/heads/"
#: what `lookup` answers for a path that is not there (None is a value: JSON null)
MISSING: Any = object()


def lookup(root: Any, segments: Sequence[str]) -> Any:
    """The value at a dotted path, or `MISSING`; integer segments index lists."""
    current = root
    for segment in segments:
        if isinstance(current, dict | Mapping):  # dict first: the fast, common case
            current = current.get(segment, MISSING)
        elif isinstance(current, list) and segment.isdigit() and segment.isascii():
            index = int(segment)
            current = current[index] if index < len(current) else MISSING
        else:
            return MISSING
        if current is MISSING:
            return MISSING
    return current


def json_equal(left: Any, right: Any) -> bool:
    """Strict JSON equality: `1 == 1.0`, but `true != 1` and `"1" != 1`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(v, right[k]) for k, v in left.items())
    return False


def event_branch(github: Mapping[str, Any]) -> tuple[str | None, str]:
    """The branch an event is about, and where it came from (or why there is none).

    - pull_request, pull_request_review, pull_request_review_comment,
      pull_request_review_thread: the PR's base branch, `pullRequest.base.ref`.
    - check_run, check_suite, workflow_run, workflow_job: the head branch
      (`checkRun.checkSuite.headBranch`, `checkSuite.headBranch`, …); null for some fork runs.
    - create, delete: `ref` when `refType` is `branch` (tags have no branch).
    - merge_group: `mergeGroup.baseRef` without `refs/heads/` (the branch being merged into).
    - every other event (push, workflow_dispatch, …): `ref` when it starts with `refs/heads/`,
      without that prefix; a tag ref (`refs/tags/…`) has no branch.
    Events with none of these (issue_comment, issues, status, …) have no branch.
    """
    event = github.get("event")
    if event in _PULL_REQUEST_EVENTS:
        return _string(github, ("pullRequest", "base", "ref"))
    if isinstance(event, str) and event in _HEAD_BRANCH:
        return _string(github, _HEAD_BRANCH[event])
    if event in ("create", "delete"):
        kind = github.get("refType")
        if kind != "branch":
            return None, f"github.refType is {show_value(kind)}, not branch"
        return _string(github, ("ref",))
    if event == "merge_group":
        return _heads(github, ("mergeGroup", "baseRef"))
    return _heads(github, ("ref",))


def _string(github: Mapping[str, Any], path: tuple[str, ...]) -> tuple[str | None, str]:
    where = "github." + ".".join(path)
    value = lookup(github, path)
    if isinstance(value, str) and value:
        return value, where
    if value is MISSING:
        return None, f"{where} is missing"
    return None, f"{where} is {show_value(value)}"


def _heads(github: Mapping[str, Any], path: tuple[str, ...]) -> tuple[str | None, str]:
    ref, where = _string(github, path)
    if ref is None:
        return None, where
    if not ref.startswith(_HEADS) or len(ref) == len(_HEADS):
        return None, f"{where} {show_value(ref)} is not a branch"
    return ref[len(_HEADS) :], where


def show_value(value: Any, limit: int = 80) -> str:
    """A short JSON rendering of a value for a decision's detail (never the whole of it)."""
    if value is MISSING:
        return "missing"
    if isinstance(value, str):
        text = json.dumps(value[:limit], ensure_ascii=False)
        return text if len(value) <= limit else text[:-1] + '…"'
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        if len(value) <= 8 and all(not isinstance(v, Mapping | list | tuple) for v in value):
            return "[" + ", ".join(show_value(v, 40) for v in value) + "]"
        return f"a list of {len(value)} items"
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return repr(value)[:limit]


def listed(values: Iterable[str]) -> str:
    return ", ".join(values) or "(none)"
