"""Bounded `matches` patterns: RE2 only, Python-only syntax refused by name, capped subjects."""

from __future__ import annotations

import pytest

from agents.regex_bound import (
    MAX_PATTERN,
    MAX_PROGRAM_SIZE,
    MAX_SUBJECT,
    SEARCH_BUDGET,
    PatternError,
    compile_bounded,
)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"^/review\b", "/review please", True),
        (r"^/review\b", "/reviewer", False),
        (r"^/review\b", "please /review", False),
        (r"(?m)^/review\b", "hi\n/review", True),
        (r"fix(es)? #\d+", "this fixes #12", True),
        (r"(?i)LGTM", "lgtm!", True),
        (r"é.", "xéy", True),
        (r"\pL+$", "naïve", True),
        (r"^$", "", True),
        (r"a\z", "ba", True),
        (r"(?P<word>\w+)", "hello", True),
        (r"\\1", "a\\1", True),  # an escaped backslash then 1 is no backreference
    ],
)
def test_search(pattern: str, text: str, found: bool) -> None:
    assert compile_bounded(pattern).search(text) is found


def test_lone_surrogates_in_the_subject_do_not_raise() -> None:
    assert compile_bounded("x").search("\ud800x") is True
    assert compile_bounded("y").search("\ud800x") is False


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "backreferences"),
        (r"foo(?=bar)", "lookaround"),
        (r"foo(?!bar)", "lookaround"),
        (r"(?<=a)b", "lookaround"),
        (r"(?<!a)b", "lookaround"),
        (r"(?>ab)", "atomic groups"),
        (r"a++", "possessive"),
        (r"a(?#note)", "inline comments"),
        (r"(?x) a b", "verbose mode"),
        (r"end\Z", r"write \z"),
    ],
)
def test_python_only_syntax_is_refused_by_name(pattern: str, named: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_bounded(pattern)
    error = caught.value
    assert error.python_only is True
    assert error.pattern == pattern
    assert named in error.reason
    assert "not supported by the bounded engine" in str(error)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(", "missing )"),
        ("a{1001}", "invalid repetition size"),
        ("[z-a]", "invalid character class range"),
    ],
)
def test_invalid_patterns_carry_re2_s_reason(pattern: str, reason: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_bounded(pattern)
    assert caught.value.python_only is False
    assert reason in caught.value.reason
    assert "not a valid RE2 pattern" in str(caught.value)


def test_overlong_patterns_are_refused() -> None:
    with pytest.raises(PatternError, match=f"longer than {MAX_PATTERN}"):
        compile_bounded("a" * (MAX_PATTERN + 1))


def test_patterns_whose_program_is_too_large_are_refused() -> None:
    # Each level multiplies the program; RE2 refuses it instead of using unbounded memory.
    with pytest.raises(PatternError):
        compile_bounded("((((a{1,1000}){1,1000}){1,1000}){1,1000})")


@pytest.mark.parametrize(
    "pattern", [r"(?s)(.*.){500}", r"(?s)[xy].{1000}.{1000}.{1000}q", r"(\pL+\s*){3}"]
)
def test_patterns_over_the_cost_bound_are_refused(pattern: str) -> None:
    with pytest.raises(PatternError, match=f"more than the {MAX_PROGRAM_SIZE} a filter may cost"):
        compile_bounded(pattern)


def test_subject_searched_shrinks_as_the_program_grows() -> None:
    small = compile_bounded("needle")
    assert small.subject_limit == MAX_SUBJECT
    large = compile_bounded(r"(?s)(.*.){300}")
    assert large.program_size > 1000
    assert large.subject_limit == SEARCH_BUDGET // large.program_size < MAX_SUBJECT
    assert large.program_size * large.subject_limit <= SEARCH_BUDGET
    wide = compile_bounded(r"(?s)(.*.){300}z")
    text = "x" * (wide.subject_limit - 1) + "z"
    assert wide.search(text) is True
    assert wide.search("x" + text) is False  # the z is past what the budget searches


def test_groups_never_capture_yet_keep_their_meaning() -> None:
    assert compile_bounded(r"^(?P<cmd>/fix|/review)\b").search("/review please") is True
    assert compile_bounded(r"(ab)+c").search("ababc") is True
    assert compile_bounded(r"(ab)+c").search("abac") is False


def test_compiled_patterns_are_cached() -> None:
    assert compile_bounded(r"cached\d") is compile_bounded(r"cached\d")


@pytest.mark.timeout(60)
def test_a_hostile_pattern_on_25_mb_returns() -> None:
    hostile = compile_bounded("(a+)+$")
    text = "a" * (25 * 1024 * 1024) + "!"
    assert hostile.search(text) is False
    assert compile_bounded("(x+x+)+y").search("x" * (25 * 1024 * 1024)) is False


class TestSubjectCap:
    def test_only_the_first_mib_is_searched(self) -> None:
        text = "a" * MAX_SUBJECT + "needle"
        assert compile_bounded("needle").search(text) is False
        assert compile_bounded("needle").search("needle" + text) is True

    def test_end_anchors_do_not_match_at_the_cut(self) -> None:
        text = "a" * (MAX_SUBJECT + 10)
        assert compile_bounded("a$").search(text) is False
        assert compile_bounded(r"a\z").search(text) is False
        assert compile_bounded(r"a\b").search(text) is False

    def test_a_subject_exactly_at_the_cap_is_searched_whole(self) -> None:
        text = "a" * (MAX_SUBJECT - 1) + "z"
        assert compile_bounded("z$").search(text) is True

    def test_the_cut_counts_characters_not_bytes(self) -> None:
        text = "é" * (MAX_SUBJECT - 1) + "z" + "tail"
        assert compile_bounded("z").search(text) is True
        assert compile_bounded("z$").search(text) is False
        assert compile_bounded("tail").search(text) is False
