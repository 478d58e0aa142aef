"""Bounded regular expressions for `matches` filters: RE2, linear time, capped cost.

A filter pattern is written by an agent author, the subject comes from a webhook (a comment
body can be megabytes), so neither may stall a worker:

- Patterns run on RE2 (google-re2): no backtracking, time linear in the subject, memory
  bounded by `MAX_PROGRAM_BYTES`. Python-only syntax has no linear-time implementation and is
  refused at compile time with a clear `PatternError`: backreferences (`\\1`, `(?P=name)`),
  lookarounds (`(?=`, `(?!`, `(?<=`, `(?<!`), atomic groups and possessive quantifiers,
  inline comments, verbose mode; `\\Z` must be written `\\z`.
- A filter only asks whether the pattern matches, so groups never capture: RE2 then answers
  from its DFA instead of tracking submatches through the whole subject.
- Cost: RE2's worst case (its NFA, when the DFA runs out of memory) is the program size times
  the subject length. A pattern whose program has more than `MAX_PROGRAM_SIZE` instructions is
  refused at compile time (`hookspawn check`), and a search looks at the first
  `subject_limit` characters only: `MAX_SUBJECT` (1 MiB of code points), less for larger
  programs, so that program size times characters stays under `SEARCH_BUDGET`. Anchors and `\\b`
  still see the character after the cut, so `$` never matches there: a pattern that needs the
  end of a longer string does not match.
- RE2 classes are ASCII where Python's are Unicode: `\\d`, `\\w`, `\\s` and `\\b` see ASCII
  only (use `\\pN`, `\\pL` for Unicode).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

from agents.errors import RuleError

__all__ = [
    "MAX_PATTERN",
    "MAX_PROGRAM_BYTES",
    "MAX_PROGRAM_SIZE",
    "MAX_SUBJECT",
    "SEARCH_BUDGET",
    "BoundedPattern",
    "PatternError",
    "compile_bounded",
]

MAX_PATTERN = 1000
MAX_SUBJECT = 1 << 20
MAX_PROGRAM_BYTES = 8 << 20
# RE2 instructions: `^/fix\b` has 5, `[a-z]{100}` 104, `\pL+` 1201 (Unicode classes are
# large), `(?s)(.*.){500}` 4503
MAX_PROGRAM_SIZE = 3000
SEARCH_BUDGET = 64 * MAX_SUBJECT  # program size times subject characters, per search

# Python-only constructs, named so the author knows what to rewrite.
_UNSUPPORTED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\\[1-9]|\(\?P="), "backreferences (\\1, (?P=name)) need backtracking"),
    (
        re.compile(r"\(\?<?[=!]"),
        "lookaround assertions ((?=, (?!, (?<=, (?<!) need backtracking",
    ),
    (re.compile(r"\(\?>|[*+?}][+]"), "atomic groups and possessive quantifiers are Python-only"),
    (re.compile(r"\(\?#"), "inline comments (?#...) are Python-only"),
    (re.compile(r"\(\?[a-zA-Z]*x"), "verbose mode (?x) is Python-only"),
    (re.compile(r"\\Z"), "\\Z is Python-only: write \\z for the end of the text"),
)


class PatternError(RuleError):
    """A `matches` pattern the bounded engine refuses; `pattern` and `reason` say why.

    `python_only` is True for constructs Python's `re` accepts but RE2 cannot run; `costly`
    for a valid pattern over the cost bound.
    """

    def __init__(
        self, pattern: str, reason: str, *, python_only: bool = False, costly: bool = False
    ) -> None:
        what = "not supported by the bounded engine" if python_only else "not a valid RE2 pattern"
        if costly:
            what = "too costly for a filter"
        super().__init__(f"pattern {_clip(pattern)!r} is {what}: {reason}")
        self.pattern = pattern
        self.reason = reason
        self.python_only = python_only


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _options() -> Any:
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_BYTES
    options.log_errors = False  # the error comes back as PatternError; keep stderr quiet
    options.never_capture = True  # a filter needs no submatches (see the module docstring)
    return options


@dataclass(frozen=True)
class BoundedPattern:
    """A compiled `matches` pattern; `search(text)` is an unanchored, bounded search."""

    source: str
    _regex: Any = field(repr=False, compare=False)

    @property
    def program_size(self) -> int:
        return int(self._regex.programsize)

    @property
    def subject_limit(self) -> int:
        """How many characters of a subject a search looks at (the run-time budget)."""
        return min(MAX_SUBJECT, SEARCH_BUDGET // max(self.program_size, 1))

    def search(self, text: str) -> bool:
        limit = self.subject_limit
        if len(text) <= limit:
            subject = text.encode("utf-8", "surrogatepass")
            return self._regex.search(subject) is not None
        # Keep one character past the cut so `$`, `\\z` and `\\b` see that the text goes on.
        head = text[: limit + 1].encode("utf-8", "surrogatepass")
        cut = len(head) - len(text[limit].encode("utf-8", "surrogatepass"))
        return self._regex.search(head, 0, cut) is not None


def _unsupported(pattern: str) -> str | None:
    # Skip escaped backslashes so `\\1` (a literal backslash, then 1) is not a backreference.
    scrubbed = pattern.replace("\\\\", "__")
    for construct, name in _UNSUPPORTED:
        if construct.search(scrubbed):
            return name
    return None


@lru_cache(maxsize=1024)
def compile_bounded(pattern: str) -> BoundedPattern:
    """Compile (and cache) a `matches` pattern; raises PatternError with the reason."""
    if len(pattern) > MAX_PATTERN:
        raise PatternError(pattern, f"longer than {MAX_PATTERN} characters")
    try:
        regex = re2.compile(pattern, _options())
    except re2.error as exc:
        named = _unsupported(pattern)
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        if named is not None:
            raise PatternError(pattern, named, python_only=True) from None
        raise PatternError(pattern, str(detail)) from None
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            pattern,
            f"its RE2 program has {regex.programsize} instructions, more than the "
            f"{MAX_PROGRAM_SIZE} a filter may cost (large counted repetitions such as {{500}} "
            "multiply it)",
            costly=True,
        )
    return BoundedPattern(pattern, regex)
