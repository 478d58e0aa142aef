"""Repository and branch globs: `*` and `?` within a path segment, `**` across them.

Syntax, checked by `validate_glob`:

- `/` separates path segments; no segment may be empty (`a//b`, `/a`, `a/` are errors).
- `*` matches any run of characters within one segment (never `/`), `?` exactly one.
- `**` must be a whole segment. Leading or in the middle it matches zero or more whole
  segments (`**/x` matches `x` and `a/b/x`; `a/**/b` matches `a/b` and `a/x/y/b`); at the end
  one or more (`release/**` matches `release/1.0` and `release/1/hotfix`, not `release`).
- Everything else is literal (no character classes or escapes).

Matching runs in O(len(subject) * len(glob)), because a branch name comes from the webhook and
a glob with several stars must not cost polynomial time on it. Globs with at most one star per
segment and no `**` (nearly all of them) become a regex that cannot backtrack badly; the others
are matched without regex backtracking: each segment is split at its stars into fixed-width
chunks whose middle ones are placed leftmost-first, which is exact for such patterns, and
groups of segments between `**` are placed the same way. Compiled globs are cached.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from agents.errors import RuleError

__all__ = [
    "MAX_GLOB",
    "Glob",
    "GlobError",
    "GlobSet",
    "compile_glob",
    "compile_globs",
    "validate_glob",
]

MAX_GLOB = 1000


class GlobError(RuleError):
    """A glob that cannot be compiled; `glob` is the text, `reason` says what is wrong."""

    def __init__(self, glob: str, reason: str) -> None:
        super().__init__(f"{glob!r} is not a valid glob: {reason}")
        self.glob = glob
        self.reason = reason


def validate_glob(text: str) -> str | None:
    """None when `text` is a valid glob, else what is wrong (for compile-time diagnostics)."""
    if not text:
        return "empty glob"
    if len(text) > MAX_GLOB:
        return f"longer than {MAX_GLOB} characters"
    for segment in text.split("/"):
        if not segment:
            return "empty path segment"
        if "**" in segment and segment != "**":
            return "** must be a whole path segment"
    return None


@dataclass(frozen=True)
class _Chunk:
    """A fixed-width piece of a segment between stars; `?` matches any one character."""

    text: str
    wild: re.Pattern[str] | None  # set when the chunk holds `?`

    def at(self, subject: str, pos: int) -> bool:
        if self.wild is None:
            return subject.startswith(self.text, pos)
        return self.wild.match(subject, pos) is not None

    def find(self, subject: str, start: int, end: int) -> int:
        """Leftmost position in [start, end) where the chunk fits entirely before `end`."""
        if self.wild is None:
            return subject.find(self.text, start, end)
        found = self.wild.search(subject, start, end)
        return -1 if found is None else found.start()


def _chunk(text: str) -> _Chunk:
    if "?" not in text:
        return _Chunk(text, None)
    # Fixed width and no quantifiers: match/search cost is linear in the subject.
    source = "".join("." if char == "?" else re.escape(char) for char in text)
    return _Chunk(text, re.compile(source, re.DOTALL))


@dataclass(frozen=True)
class _Segment:
    """One segment of a glob (not `**`): a literal, or chunks separated by stars."""

    literal: str | None
    chunks: tuple[_Chunk, ...] = ()
    width: int = 0  # the fewest characters the segment can match
    starred: bool = True  # False: `?` but no star, so exactly `width` characters

    def match(self, subject: str) -> bool:
        if self.literal is not None:
            return subject == self.literal
        if len(subject) < self.width:
            return False
        if not self.starred:
            return len(subject) == self.width and self.chunks[0].at(subject, 0)
        first, *middle, last = self.chunks
        if not first.at(subject, 0):
            return False
        pos = len(first.text)
        end = len(subject) - len(last.text)
        if end < pos or not last.at(subject, end):
            return False
        for chunk in middle:
            found = chunk.find(subject, pos, end)
            if found < 0:
                return False
            pos = found + len(chunk.text)
        return True


def _segment(text: str) -> _Segment:
    if "*" not in text and "?" not in text:
        return _Segment(text)
    chunks = tuple(_chunk(part) for part in text.split("*"))
    if len(chunks) == 1:
        return _Segment(None, chunks, len(text), starred=False)
    return _Segment(None, chunks, sum(len(chunk.text) for chunk in chunks))


Group = tuple[_Segment, ...]


@dataclass(frozen=True)
class Glob:
    """A compiled glob; `match(subject)` says whether the whole subject matches."""

    source: str
    ignore_case: bool
    groups: tuple[Group, ...]  # the glob's segments split at `**`
    trailing_any: bool  # ends with `**`: at least one segment must remain for it
    simple: re.Pattern[str] | None  # set when a regex cannot backtrack badly (see _simple)

    def match(self, subject: str) -> bool:
        if self.ignore_case:
            subject = subject.lower()
        if self.simple is not None:
            return self.simple.fullmatch(subject) is not None
        return _match_segments(self, subject.split("/"))


def _simple(pattern: str) -> re.Pattern[str] | None:
    """A regex for globs without `**` and with at most one star per segment, else None.

    Such a regex is fast (C) and safe: `[^/]*` cannot cross a `/`, so each segment can end in
    one place only and a failure never multiplies work across segments or stars.
    """
    segments = pattern.split("/")
    if any(segment == "**" or segment.count("*") > 1 for segment in segments):
        return None
    wild = {"*": "[^/]*", "?": "[^/]"}
    source = "/".join(
        "".join(wild.get(char) or re.escape(char) for char in segment) for segment in segments
    )
    return re.compile(source, re.DOTALL)


def _group_at(group: Group, parts: Sequence[str], pos: int) -> bool:
    return all(segment.match(parts[pos + i]) for i, segment in enumerate(group))


def _match_segments(glob: Glob, parts: Sequence[str]) -> bool:
    groups = glob.groups
    if len(groups) == 1:
        (only,) = groups
        return len(only) == len(parts) and _group_at(only, parts, 0)
    first, *middle, last = groups
    end = len(parts) - len(last)
    if end < len(first) or not _group_at(first, parts, 0) or not _group_at(last, parts, end):
        return False
    pos = len(first)
    for group in middle:
        # Leftmost placement leaves the most room for the groups after it.
        for start in range(pos, end - len(group) + 1):
            if _group_at(group, parts, start):
                pos = start + len(group)
                break
        else:
            return False
    return not glob.trailing_any or pos < end


@lru_cache(maxsize=4096)
def compile_glob(text: str, *, ignore_case: bool = False) -> Glob:
    """Compile (and cache) a glob; raises GlobError when `validate_glob` rejects it."""
    problem = validate_glob(text)
    if problem is not None:
        raise GlobError(text, problem)
    pattern = text.lower() if ignore_case else text
    groups: list[list[_Segment]] = [[]]
    for part in pattern.split("/"):
        if part == "**":
            groups.append([])
        else:
            groups[-1].append(_segment(part))
    return Glob(
        source=text,
        ignore_case=ignore_case,
        groups=tuple(tuple(group) for group in groups),
        trailing_any=pattern == "**" or pattern.endswith("/**"),
        simple=_simple(pattern),
    )


@dataclass(frozen=True)
class GlobSet:
    """Several globs; a subject matches when any of them does."""

    globs: tuple[Glob, ...]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(glob.source for glob in self.globs)

    def match(self, subject: str) -> bool:
        return any(glob.match(subject) for glob in self.globs)


def compile_globs(texts: Iterable[str], *, ignore_case: bool = False) -> GlobSet:
    """Compile each glob (cached); raises GlobError naming the first invalid one."""
    return GlobSet(tuple(compile_glob(text, ignore_case=ignore_case) for text in texts))
