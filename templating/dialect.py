"""Where a template is used, which decides what its paths are read against."""

from __future__ import annotations

import enum

__all__ = ["Dialect"]


class Dialect(enum.StrEnum):
    """Where a template is used, which decides what it renders against.

    A ref template renders against the session input (`triggerEventId` and `payload`); a text
    template (trigger message, initial prompt, display title) against the payload itself.
    """

    REF = "ref"  # mounts[].ref: the session input {triggerEventId, payload}
    TEXT = "text"  # trigger message, initialPrompt, displayTitle: the payload itself
