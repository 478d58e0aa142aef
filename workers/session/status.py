"""A locally run session's statuses: one enum, which the run record's Lua scripts are built from."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

__all__ = ["ACTIVE", "TERMINAL", "SessionStatus", "lua_is", "lua_literal"]


class SessionStatus(StrEnum):
    """Where a session run by the local runner stands, in the order it moves through them."""

    QUEUED = "queued"
    STAGING = "staging"
    SETUP = "setup"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: a runner holds the session (under a lease)
ACTIVE = (SessionStatus.STAGING, SessionStatus.SETUP, SessionStatus.RUNNING)
#: the session has ended: its log grows no more and nothing moves it on
TERMINAL = (SessionStatus.SUCCEEDED, SessionStatus.FAILED, SessionStatus.CANCELLED)


def lua_literal(status: SessionStatus) -> str:
    """`status` as a Lua string literal."""
    return f"'{status.value}'"


def lua_is(name: str, statuses: Iterable[SessionStatus]) -> str:
    """A Lua condition: the local `name` holds one of `statuses`."""
    return "(" + " or ".join(f"{name} == {lua_literal(status)}" for status in statuses) + ")"
