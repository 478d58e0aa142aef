"""Safe ref names: one accepted and one refused example per rule, checked against real git."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from templating import InvalidRefError, check_ref, is_safe_ref
from templating.refs import _broken_char, _broken_rule, _broken_shape
from tests.templating.git import GIT, git_accepts

pytestmark = pytest.mark.skipif(not GIT.exists(), reason="needs /usr/bin/git")

# (rule, a ref that keeps it, a ref that breaks it, words from the refusal reason)
RULES = [
    ("non-empty", "a", "", "is empty"),
    ("no '..'", "a.b", "a..b", "'..'"),
    ("no component starting with '.'", "a/b.c", "a/.b", "starting with '.'"),
    ("no leading '.'", "x.y", ".x", "starting with '.'"),
    ("no component ending with '.lock'", "refs/heads/x.locks", "refs/heads/x.lock", ".lock"),
    ("no inner component ending with '.lock'", "a.lockx/b", "a.lock/b", ".lock"),
    ("no control characters", "a-b", "a\x01b", "control character U+0001"),
    ("no DEL", "a_b", "a\x7fb", "control character U+007F"),
    ("no space", "a_b", "a b", "a space"),
    ("no tab", "a_b", "a\tb", "control character U+0009"),
    ("no '~'", "a-1", "a~1", "'~'"),
    ("no '^'", "a1", "a^1", "'^'"),
    ("no ':'", "a-b", "a:b", "':'"),
    ("no '?'", "ab", "a?b", "'?'"),
    ("no '*'", "ab", "a*b", "'*'"),
    ("no '['", "a]b", "a[b", "'['"),
    ("no backslash", "a/b", "a\\b", "'\\\\'"),
    ("no '@{'", "a@b{", "a@{b", "'@{'"),
    ("not exactly '@'", "@a", "@", "'@'"),
    ("no trailing '/'", "x/y", "x/", "ends with '/'"),
    ("no trailing '.'", "x.y", "x.", "ends with '.'"),
    ("no leading '/'", "x/y", "/x", "starts with '/'"),
    ("no '//'", "a/b", "a//b", "'//'"),
    ("no leading '-'", "a-", "--upload-pack=x", "starts with '-'"),
    (
        "no component starting with '-'",
        "refs/heads/a-b",
        "refs/heads/--upload-pack=x",
        "starting with '-'",
    ),
    ("no unicode whitespace", "a\u00e9b", "a\u00a0b", "whitespace (U+00A0)"),
    ("no line separator", "a\u2013b", "a\u2028b", "whitespace (U+2028)"),
    ("no bidi override", "\u05d0\u05d1", "a\u202eb", "U+202E"),
    ("no zero-width space", "ab", "a\u200bb", "U+200B"),
    ("no C1 control", "a\u00a9b", "a\u0085b", "U+0085"),
    ("at most 255 bytes", "é" * 127 + "a", "é" * 128, "256 bytes"),
    ("at most 255 bytes (ascii)", "r" * 255, "r" * 300, "300 bytes"),
]


@pytest.mark.parametrize(("rule", "good", "bad", "says"), RULES, ids=[r[0] for r in RULES])
def test_each_rule(rule: str, good: str, bad: str, says: str, tmp_path: Path) -> None:
    check_ref(good)
    assert is_safe_ref(good)
    assert git_accepts(good, tmp_path), f"git refuses the good example of {rule}"
    with pytest.raises(InvalidRefError) as caught:
        check_ref(bad)
    assert not is_safe_ref(bad)
    err = caught.value
    assert err.code == "invalid_ref"
    assert err.ref == bad
    assert says in err.reason, err.reason
    assert err.message == f"invalid ref {bad!r}: {err.reason}"


KNOWN_BAD = [
    "--upload-pack=x",
    "a..b",
    "refs/heads/x.lock",
    "@{",
    "@",
    "x" * 300,
    "a b",
    "x/",
    ".x",
    "a//b",
    "-",
    "refs/heads/main\n",
    "HEAD@{1}",
    "a/./b",
    "a/../b",
    "\0",
    "\ud800",
]


@pytest.mark.parametrize("ref", KNOWN_BAD)
def test_known_bad_names_are_refused(ref: str) -> None:
    assert not is_safe_ref(ref)
    with pytest.raises(InvalidRefError):
        check_ref(ref)


@pytest.mark.parametrize(
    "ref",
    ["main", "refs/pull/2/head", "release/1.2.3", "feature/ünïcode", "v1.0-rc.1", "a@b", "HEAD"],
)
def test_ordinary_names_pass_and_git_agrees(ref: str, tmp_path: Path) -> None:
    assert is_safe_ref(ref)
    assert git_accepts(ref, tmp_path)


# Ref-like names from the characters the rules are about, so both sides of each rule come up.
_TRICKY = st.sampled_from(
    [".", "..", "/", "//", "@", "@{", "{", "-", "~", "^", ":", "?", "*", "[", "\\", " ",
     "\t", "\x7f", "\x1f", ".lock", "lock", "a", "b", "Z", "0", "_", "é", "\u00a0", "\u202e",
     "\u200b", "\u3000", "refs", "heads", "x" * 120]
)  # fmt: skip
_REFLIKE = st.lists(_TRICKY, min_size=1, max_size=12).map("".join)
_PLAUSIBLE = st.lists(
    st.text(alphabet=st.sampled_from("abcXYZ019._-@{}é"), min_size=1, max_size=12),
    min_size=1,
    max_size=4,
).map("/".join)
_EXTRAS = (
    "starts with '-'",
    "starting with '-'",
    "whitespace",
    "bytes long",
    "invisible or control",
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@pytest.mark.slow
@given(ref=st.one_of(_REFLIKE, _PLAUSIBLE, st.text(min_size=1, max_size=20)))
def test_every_accepted_ref_is_accepted_by_git(ref: str, tmp_path: Path) -> None:
    if "\0" in ref:  # cannot be an argv entry; refused by the table above
        assert not is_safe_ref(ref)
        return
    git_ok = git_accepts(ref, tmp_path)
    reason = _refusal(ref)
    assert (reason is None) == is_safe_ref(ref)
    if reason is None:
        assert git_ok, f"accepted {ref!r} but git refuses it"
    elif git_ok:  # we may refuse more than git, but only by our own extra rules
        assert any(extra in reason for extra in _EXTRAS), (ref, reason)


def _refusal(ref: str) -> str | None:
    try:
        check_ref(ref)
    except InvalidRefError as err:
        return err.reason
    return None


@settings(max_examples=500, deadline=None)
@given(ref=st.one_of(_REFLIKE, st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=30)))
def test_the_ascii_shortcut_refuses_exactly_what_the_character_rules_refuse(ref: str) -> None:
    # every ref goes through the full per-character rules here, shortcut or not
    full = None if not ref else (_broken_char(ref) or _broken_shape(ref))
    if ref and len(ref.encode("utf-8")) <= 255:
        assert _broken_rule(ref) == full, ref
