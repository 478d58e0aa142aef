"""Trigger entries → Trigger: event, globs, filters, bots, text templates, stable keys."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from typing import Any

from agents.github_events import GITHUB_EVENTS
from agents.globs import validate_glob
from agents.model import Filter, FilterOp, Trigger
from agents.regex_bound import PatternError, compile_bounded
from agents.schema import NAME_RE, Sink, join, opt_bool, opt_enum, opt_str, opt_str_list, strict_map
from agents.source import YNode, YScalar, YSeq, describe, to_plain
from agents.templates import compile_field
from templating import Dialect, Template

__all__ = [
    "MAX_PATTERN",
    "compile_trigger",
    "compile_triggers",
    "trigger_key",
    "unknown_event",
]

MAX_PATTERN = 1000
EVENT_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
# GitHub's own actions are snake_case; repository_dispatch carries the sender's event_type
# (`on-demand-test` in GitHub's example)
ACTION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
FILTER_PATH_RE = re.compile(r"github(\.[A-Za-z0-9_-]+)*")
_REPO_SEGMENT = re.compile(r"[A-Za-z0-9._*?-]+")
_BRANCH_BAD = re.compile(r"[\s~^:\[\\\x00-\x1f\x7f]")
_OPS: tuple[FilterOp, ...] = ("equals", "in", "matches", "exists")
_TEXTS = (
    ("displayTitle", "display_title"),
    ("initialPrompt", "initial_prompt"),
    ("message", "message"),
)
_TRIGGER_KEYS = (
    "kind",
    "event",
    "actions",
    "repositories",
    "branches",
    "filters",
    "name",
    "bots",
    "displayTitle",
    "initialPrompt",
    "message",
)


def trigger_key(definition: dict[str, Any]) -> str:
    """A stable short hash of a trigger's canonical JSON definition."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def compile_triggers(sink: Sink, node: YNode | None) -> list[Trigger]:
    """The agent's trigger list; two triggers with one key (name, else definition) clash."""
    if node is None:
        return []
    if not isinstance(node, YSeq):
        sink.error(node.loc, "triggers", f"must be a list of triggers, got {describe(node)}")
        return []
    out: list[Trigger] = []
    keys: dict[str, int] = {}
    for index, item in enumerate(node.items):
        path = join("triggers", index)
        trigger = compile_trigger(sink, item, path, len(out))
        if trigger is None:
            continue
        if trigger.key in keys:
            what = f"name {trigger.name!r}" if trigger.name else "definition"
            sink.error(item.loc, path, f"same {what} as triggers.{keys[trigger.key]}")
            continue
        keys[trigger.key] = index
        out.append(trigger)
    return out


def compile_trigger(sink: Sink, node: YNode, path: str, index: int) -> Trigger | None:
    before = sink.error_count
    entry = strict_map(
        sink, node, path, allowed=_TRIGGER_KEYS, required=("event",), what="a trigger"
    )
    if entry is None:
        return None
    opt_enum(sink, entry.get("kind"), join(path, "kind"), ("github",))
    event = opt_str(
        sink,
        entry.get("event"),
        join(path, "event"),
        pattern=EVENT_RE,
        rule="a GitHub event name such as pull_request",
    )
    if event is not None and event not in GITHUB_EVENTS:
        event_node = entry.get("event")
        assert event_node is not None
        sink.error(event_node.loc, join(path, "event"), unknown_event(event))
    actions = opt_str_list(
        sink,
        entry.get("actions"),
        join(path, "actions"),
        non_empty_list=True,
        pattern=ACTION_RE,
        rule="an action name such as opened",
    )
    repositories = _globs(
        sink, entry.get("repositories"), join(path, "repositories"), _repository_glob
    )
    branches = _globs(sink, entry.get("branches"), join(path, "branches"), _branch_glob)
    filters = _filters(sink, entry.get("filters"), join(path, "filters"))
    name = opt_str(
        sink,
        entry.get("name"),
        join(path, "name"),
        pattern=NAME_RE,
        rule="1-128 characters of [A-Za-z0-9_.-]",
    )
    bots = opt_bool(sink, entry.get("bots"), join(path, "bots"))
    texts: dict[str, Template | None] = {}
    for key, attr in _TEXTS:
        texts[attr] = _text(sink, entry.get(key), join(path, key))
    if sink.error_count > before or event is None:
        return None
    trigger = Trigger(
        index=index,
        key="",
        event=event,
        actions=tuple(actions) if actions is not None else None,
        repositories=tuple(repositories) if repositories is not None else None,
        branches=tuple(branches) if branches is not None else None,
        filters=tuple(filters),
        name=name,
        bots=bool(bots),
        display_title=texts["display_title"],
        initial_prompt=texts["initial_prompt"],
        message=texts["message"],
    )
    key = name if name is not None else trigger_key(trigger.definition())
    return dataclasses.replace(trigger, key=key)


def unknown_event(event: str) -> str:
    """Why `event` is refused: no GitHub webhook has that name (and the closest that does)."""
    squashed = event.replace("_", "").rstrip("s")
    close = [n for n in sorted(GITHUB_EVENTS) if n.replace("_", "").rstrip("s") == squashed]
    close = close or difflib.get_close_matches(event, GITHUB_EVENTS, n=1, cutoff=0.75)
    hint = f"did you mean {close[0]!r}?" if close else "an X-GitHub-Event name such as pull_request"
    return f"unknown GitHub webhook event {event!r} ({hint})"


def _text(sink: Sink, node: YNode | None, path: str) -> Template | None:
    value = opt_str(sink, node, path, non_empty=False)
    if value is None or node is None:
        return None
    assert isinstance(node, YScalar)
    return compile_field(sink, node, value, path, Dialect.TEXT)


def _globs(sink: Sink, node: YNode | None, path: str, check: Any) -> list[str] | None:
    values = opt_str_list(sink, node, path, non_empty_list=True)
    if values is None or not isinstance(node, YSeq):
        return values
    good = []
    for index, item in enumerate(node.items):
        if not (isinstance(item, YScalar) and isinstance(item.value, str) and item.value):
            continue
        problem = check(item.value)
        if problem:
            sink.error(
                item.loc, join(path, index), f"{item.value!r} is not a valid glob: {problem}"
            )
        else:
            good.append(item.value)
    return good


def _repository_glob(glob: str) -> str | None:
    problem = validate_glob(glob)
    if problem:
        return problem
    segments = glob.split("/")
    for segment in segments:
        if segment != "**" and not _REPO_SEGMENT.fullmatch(segment):
            return f"segment {segment!r} has characters a repository name cannot have"
    if "**" not in segments and len(segments) != 2:
        return "repository globs match owner/name (use ** to span segments)"
    return None


def _branch_glob(glob: str) -> str | None:
    if glob.startswith("refs/"):
        return "write the branch name without refs/heads/"
    if _BRANCH_BAD.search(glob):
        return "branch names cannot contain whitespace, control characters or ~^:[\\"
    return validate_glob(glob)


def _filters(sink: Sink, node: YNode | None, path: str) -> list[Filter]:
    if node is None:
        return []
    if not isinstance(node, YSeq):
        sink.error(node.loc, path, f"must be a list of filters, got {describe(node)}")
        return []
    out = []
    for index, item in enumerate(node.items):
        compiled = _filter(sink, item, join(path, index))
        if compiled is not None:
            out.append(compiled)
    return out


def _filter(sink: Sink, node: YNode, path: str) -> Filter | None:
    entry = strict_map(
        sink, node, path, allowed=("path", *_OPS), required=("path",), what="a filter"
    )
    if entry is None:
        return None
    where = opt_str(
        sink,
        entry.get("path"),
        join(path, "path"),
        pattern=FILTER_PATH_RE,
        rule="a dotted path into the envelope, starting at github (github.pullRequest.draft)",
    )
    ops = [op for op in _OPS if op in entry.entries]
    if len(ops) != 1:
        sink.error(
            entry.loc,
            path,
            "a filter takes exactly one of equals, in, matches, exists "
            f"(got {', '.join(ops) or 'none'})",
        )
        return None
    op = ops[0]
    value_node = entry.get(op)
    assert value_node is not None
    here = join(path, op)
    value: Any = to_plain(value_node)
    pattern = None
    if op == "in" and not isinstance(value_node, YSeq):
        sink.error(value_node.loc, here, f"must be a list of values, got {describe(value_node)}")
        return None
    if op == "exists" and opt_bool(sink, value_node, here) is None:
        return None
    if op == "matches":
        valid, pattern = _pattern(sink, value_node, here)
        if not valid:
            return None
    if where is None:
        return None
    return Filter(path=where, op=op, value=value, pattern=pattern)


def _pattern(sink: Sink, node: YNode, path: str) -> tuple[bool, re.Pattern[str] | None]:
    """(valid, Python twin or None): validity is RE2's verdict, as the matcher runs RE2."""
    source = opt_str(sink, node, path)
    if source is None:
        return False, None
    if len(source) > MAX_PATTERN:
        sink.error(node.loc, path, f"pattern is longer than {MAX_PATTERN} characters")
        return False, None
    # The matcher runs patterns on RE2 (agents.regex_bound): that engine decides validity.
    try:
        compile_bounded(source)
    except PatternError as exc:
        sink.error(node.loc, path, f"invalid regular expression: {exc.reason}")
        return False, None
    # A Python twin for readers of Filter.pattern; RE2-only syntax (\pL, \z) has none.
    try:
        return True, re.compile(source)
    except (re.error, RecursionError, OverflowError):
        return True, None
