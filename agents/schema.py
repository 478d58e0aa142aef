"""Strict field checks over located nodes, reporting every problem into a Sink."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection

from agents.errors import Diagnostic, Loc
from agents.source import YMap, YNode, YScalar, YSeq, describe, join

__all__ = [
    "NAME_RE",
    "Sink",
    "join",
    "opt_bool",
    "opt_enum",
    "opt_int",
    "opt_str",
    "opt_str_list",
    "strict_map",
]

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class Sink:
    """Collects the diagnostics of one compile run, dropping exact repeats."""

    def __init__(self) -> None:
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self._seen: set[Diagnostic] = set()

    def error(self, loc: Loc, path: str, message: str) -> None:
        self._add(Diagnostic(loc.file, loc.line, path, message, "error"))

    def warning(self, loc: Loc, path: str, message: str) -> None:
        self._add(Diagnostic(loc.file, loc.line, path, message, "warning"))

    def _add(self, diagnostic: Diagnostic) -> None:
        if diagnostic in self._seen:
            return
        self._seen.add(diagnostic)
        target = self.errors if diagnostic.severity == "error" else self.warnings
        target.append(diagnostic)

    @property
    def error_count(self) -> int:
        return len(self.errors)


def strict_map(
    sink: Sink,
    node: YNode,
    path: str,
    *,
    allowed: Collection[str],
    required: Collection[str] = (),
    what: str = "",
) -> YMap | None:
    """The node as a mapping whose keys are all allowed and whose required keys are present."""
    if not isinstance(node, YMap):
        sink.error(node.loc, path, f"expected a mapping{_for(what)}, got {describe(node)}")
        return None
    for key, (key_loc, _) in node.entries.items():
        if key not in allowed:
            sink.error(
                key_loc, join(path, key), f"unknown key {key!r}{_for(what)}{_hint(key, allowed)}"
            )
    for key in required:
        if key not in node.entries:
            sink.error(node.loc, join(path, key), f"required field {key!r} is missing{_for(what)}")
    return node


def _for(what: str) -> str:
    return f" in {what}" if what else ""


def _hint(key: str, allowed: Collection[str]) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (allowed: {', '.join(sorted(allowed))})"


def opt_str(
    sink: Sink,
    node: YNode | None,
    path: str,
    *,
    pattern: re.Pattern[str] | None = None,
    rule: str = "",
    strip: bool = False,
    non_empty: bool = True,
) -> str | None:
    """A string value (None when absent or invalid; invalid ones are reported)."""
    if node is None:
        return None
    if not isinstance(node, YScalar) or not isinstance(node.value, str):
        sink.error(node.loc, path, f"must be a string, got {describe(node)}")
        return None
    value: str = node.value.strip() if strip else node.value
    if non_empty and not value.strip():
        sink.error(node.loc, path, "must not be empty")
        return None
    if pattern is not None and not pattern.fullmatch(value):
        sink.error(node.loc, path, f"{value!r} is not valid: {rule or pattern.pattern}")
        return None
    return value


def opt_bool(sink: Sink, node: YNode | None, path: str) -> bool | None:
    if node is None:
        return None
    if not isinstance(node, YScalar) or not isinstance(node.value, bool):
        sink.error(node.loc, path, f"must be true or false, got {describe(node)}")
        return None
    return node.value


def opt_int(sink: Sink, node: YNode | None, path: str, *, minimum: int) -> int | None:
    if node is None:
        return None
    value = node.value if isinstance(node, YScalar) else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 2048.0 is the integer 2048, as JSON Schema counts it
    if not isinstance(value, int) or isinstance(value, bool):
        sink.error(node.loc, path, f"must be an integer, got {describe(node)}")
        return None
    if value < minimum:
        sink.error(node.loc, path, f"must be at least {minimum}, got {value}")
        return None
    return value


def opt_enum(sink: Sink, node: YNode | None, path: str, choices: Collection[str]) -> str | None:
    if node is None:
        return None
    if (
        not isinstance(node, YScalar)
        or node.value not in choices
        or not isinstance(node.value, str)
    ):
        shown = node.value if isinstance(node, YScalar) else describe(node)
        sink.error(node.loc, path, f"must be one of {' | '.join(choices)}, got {shown!r}")
        return None
    return node.value


def opt_str_list(
    sink: Sink,
    node: YNode | None,
    path: str,
    *,
    non_empty_list: bool = False,
    pattern: re.Pattern[str] | None = None,
    rule: str = "",
) -> list[str] | None:
    """A list of non-empty strings (None when absent; invalid items are reported and dropped)."""
    if node is None:
        return None
    if not isinstance(node, YSeq):
        sink.error(node.loc, path, f"must be a list of strings, got {describe(node)}")
        return None
    if non_empty_list and not node.items:
        sink.error(node.loc, path, "must list at least one entry")
    out: list[str] = []
    for index, item in enumerate(node.items):
        value = opt_str(sink, item, join(path, index), pattern=pattern, rule=rule)
        if value is not None:
            out.append(value)
    return out
