"""Safe git ref names: git check-ref-format --allow-onelevel rules plus hookspawn's own."""

from __future__ import annotations

import re
import unicodedata

from templating.errors import InvalidRefError

__all__ = ["MAX_REF_BYTES", "check_ref", "is_safe_ref"]

MAX_REF_BYTES = 255

# git refs.c refname_disposition: characters that are never allowed in a ref name
# (control characters are handled separately, with the code point in the message).
_GIT_BAD_CHARS = frozenset(" ~^:?*[\\")
# Beyond git: anything Unicode calls a control, format (bidi overrides, zero-width)
# or surrogate character, so a ref cannot hide what it names.
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
# An ASCII character `_broken_char` would refuse: controls, DEL, whitespace, git's bad ones.
_ASCII_UNSAFE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def check_ref(ref: str) -> None:
    """Raise :class:`InvalidRefError` naming the first rule ``ref`` breaks.

    The rules are those of ``git check-ref-format --allow-onelevel`` (git's
    refs.c ``check_refname_format``), plus: not starting with ``-`` (so a ref can
    never be read as an option), no whitespace or control/format characters of any
    script, and at most 255 bytes of UTF-8.
    """
    reason = _broken_rule(ref)
    if reason is not None:
        raise InvalidRefError(ref, reason)


def is_safe_ref(ref: str) -> bool:
    """True when :func:`check_ref` accepts ``ref``."""
    return _broken_rule(ref) is None


def _broken_rule(ref: str) -> str | None:
    if not isinstance(ref, str):
        return "is not a string"
    if not ref:
        return "is empty"
    try:
        size = len(ref.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if size > MAX_REF_BYTES:
        return f"is {size} bytes long, over the limit of {MAX_REF_BYTES}"
    # plain ASCII with none of the characters `_broken_char` refuses needs no loop
    if size != len(ref) or _ASCII_UNSAFE.search(ref) is not None:
        reason = _broken_char(ref)
        if reason is not None:
            return reason
    return _broken_shape(ref)


def _broken_char(ref: str) -> str | None:
    for char in ref:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"contains the control character U+{ord(char):04X}"
        if char in _GIT_BAD_CHARS:
            return f"contains {char!r}" if char != " " else "contains a space"
        if char.isspace():
            return f"contains whitespace (U+{ord(char):04X})"
        if unicodedata.category(char) in _BAD_CATEGORIES:
            return f"contains the invisible or control character U+{ord(char):04X}"
    return None


def _broken_shape(ref: str) -> str | None:  # noqa: C901 - one flat list of rules
    if ref == "@":
        return "is '@', which git reserves"
    if ref.startswith("-"):
        return "starts with '-'"
    if ref.startswith("/"):
        return "starts with '/'"
    if ref.endswith("/"):
        return "ends with '/'"
    if ref.endswith("."):
        return "ends with '.'"
    if "//" in ref:
        return "contains '//' (an empty component)"
    if ".." in ref:
        return "contains '..'"
    if "@{" in ref:
        return "contains '@{'"
    for component in ref.split("/"):
        if component.startswith("."):
            return f"has a component starting with '.' ({component!r})"
        if component.endswith(".lock"):
            return f"has a component ending with '.lock' ({component!r})"
        if component.startswith("-"):
            # git allows refs/heads/-x, but a branch named like an option (--upload-pack=…)
            # is never worth the risk of reaching a command line
            return f"has a component starting with '-' ({component!r})"
    return None
