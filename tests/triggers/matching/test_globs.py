"""Repository and branch globs: segment rules, `**`, case, validation, linear matching."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.globs import GlobError, compile_glob, compile_globs, validate_glob

GLOBS: list[tuple[str, str, bool]] = [
    ("acme/*", "acme/widgets", True),
    ("acme/*", "acme/x/y", False),  # * stays within a segment
    ("acme/*", "other/widgets", False),
    ("acme/**", "acme/x/y", True),
    ("acme/**", "acme/x", True),
    ("acme/**", "acme", False),  # a trailing ** needs at least one segment
    ("**", "anything/at/all", True),
    ("**", "main", True),
    ("**/hotfix", "hotfix", True),  # a leading ** may match no segment
    ("**/hotfix", "release/1.2/hotfix", True),
    ("**/hotfix", "release/1.2/hotfix2", False),
    ("release/**/rc", "release/rc", True),
    ("release/**/rc", "release/1/2/rc", True),
    ("release/**/rc", "release/1/2/final", False),
    ("release/*", "release/1.2", True),
    ("release/*", "release", False),
    ("release/*", "release/1.2/x", False),
    ("rel*e/v*", "release/v2", True),
    ("*-bot", "dependabot", False),
    ("*-bot", "my-bot", True),
    ("v?.?", "v1.2", True),
    ("v?.?", "v1.23", False),
    ("v?.?", "v1/2", False),
    ("v?*", "v", False),
    ("v?*", "v1", True),
    ("*a*b*c", "xaybzc", True),
    ("*a*b*c", "xaybzcd", False),
    ("*a*b*c", "cba", False),
    ("a*a", "a", False),  # both chunks need their own characters
    ("a*a", "aa", True),
    ("main", "main", True),
    ("main", "main2", False),
    ("main", "Main", False),  # branches compare case-sensitively
]


@pytest.mark.parametrize(("glob", "subject", "expected"), GLOBS)
def test_glob(glob: str, subject: str, expected: bool) -> None:
    assert compile_glob(glob).match(subject) is expected


def test_repository_globs_ignore_case() -> None:
    glob = compile_glob("ACME/Wid*", ignore_case=True)
    assert glob.match("acme/widgets")
    assert glob.match("Acme/WIDGETS")
    assert not glob.match("acme/gadgets")
    assert not compile_glob("ACME/Wid*").match("acme/widgets")


def test_a_set_matches_when_any_glob_does() -> None:
    globs = compile_globs(["main", "release/*"])
    assert globs.match("release/2")
    assert globs.match("main")
    assert not globs.match("dev")
    assert globs.sources == ("main", "release/*")
    assert not compile_globs([]).match("main")


def test_compiled_globs_are_cached() -> None:
    assert compile_glob("cache/*") is compile_glob("cache/*")
    assert compile_glob("cache/*") is not compile_glob("cache/*", ignore_case=True)


@pytest.mark.parametrize(
    ("glob", "problem"),
    [
        ("", "empty glob"),
        ("a//b", "empty path segment"),
        ("/a", "empty path segment"),
        ("a/", "empty path segment"),
        ("a**", "** must be a whole path segment"),
        ("**b/c", "** must be a whole path segment"),
        ("a/***", "** must be a whole path segment"),
        ("x" * 1001, "longer than 1000 characters"),
    ],
)
def test_invalid_globs_are_named(glob: str, problem: str) -> None:
    assert validate_glob(glob) == problem
    with pytest.raises(GlobError) as caught:
        compile_glob(glob)
    assert caught.value.reason == problem
    assert caught.value.glob == glob
    assert problem in str(caught.value)


@pytest.mark.parametrize("glob", ["main", "acme/*", "**", "a/**/b", "v?.*", "release/**"])
def test_valid_globs(glob: str) -> None:
    assert validate_glob(glob) is None


@pytest.mark.timeout(20)
def test_many_stars_against_a_long_name_stay_linear() -> None:
    # A backtracking translation ([^/]*a[^/]*a...) would take O(n^6) here.
    glob = compile_glob("*a*a*a*a*a*b")
    assert glob.match("a" * 200_000) is False
    assert glob.match("a" * 200_000 + "b") is True
    deep = compile_glob("**/x/**/x/**/x/**/y")
    assert deep.match("/".join(["x"] * 20_000)) is False
    # One star per segment goes through a regex; each segment can end in one place only.
    simple = compile_glob("*a/*a/*a/*b")
    assert simple.simple is not None
    assert simple.match("/".join(["a" * 50_000] * 4)) is False
    assert simple.match("/".join(["a" * 50_000] * 3 + ["b"])) is True


# ---------------------------------------------------------------- against a reference


def _reference(glob: str) -> re.Pattern[str]:
    """The documented semantics as a (backtracking, small-input only) regex."""
    segments = glob.split("/")
    out, sep = "", False
    for i, segment in enumerate(segments):
        prefix = "/" if sep else ""
        if segment == "**" and i < len(segments) - 1:
            out += prefix + "(?:[^/]+/)*"
            sep = False
        elif segment == "**":
            out += prefix + "[^/]+(?:/[^/]+)*"
        else:
            out += prefix + "".join(
                "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in segment
            )
            sep = True
    return re.compile(out)


_segment = st.text(alphabet="ab*?", min_size=1, max_size=4).filter(lambda s: "**" not in s)
_glob = st.lists(st.one_of(_segment, st.just("**")), min_size=1, max_size=4).map("/".join)
_subject = st.lists(st.text(alphabet="ab", min_size=1, max_size=4), min_size=1, max_size=5).map(
    "/".join
)


@settings(max_examples=400, deadline=None)
@given(glob=_glob, subject=_subject)
def test_matches_the_reference_semantics(glob: str, subject: str) -> None:
    assert compile_glob(glob).match(subject) is bool(_reference(glob).fullmatch(subject))
