"""A locally run session's statuses have one home, the SessionStatus enum: the run record's
Lua scripts are built from its values, and the runner, the routes and the CLI read it."""

from __future__ import annotations

import re
from pathlib import Path

from workers.session import runs as session_runs
from workers.session.status import ACTIVE, TERMINAL, SessionStatus, lua_is, lua_literal

SCRIPTS = ("_QUEUE", "_CLAIM", "_ADVANCE", "_RENEW", "_CANCEL", "_LOST")
#: a Lua string a status stands in: compared with, set as the `status` field, or answered
STATUS_PLACE = re.compile(r"(?:==|~=|'status',|return)\s*'([a-z]+)'")


def test_the_statuses_are_the_runs_lifecycle() -> None:
    assert [s.value for s in SessionStatus] == [
        "queued",
        "staging",
        "setup",
        "running",
        "succeeded",
        "failed",
        "cancelled",
    ]
    assert set(ACTIVE).isdisjoint(TERMINAL) and SessionStatus.QUEUED not in ACTIVE + TERMINAL
    assert session_runs.ACTIVE is ACTIVE and session_runs.TERMINAL is TERMINAL


def test_lua_conditions_name_the_enums_values() -> None:
    assert lua_literal(SessionStatus.QUEUED) == "'queued'"
    assert lua_is("current", TERMINAL) == (
        "(current == 'succeeded' or current == 'failed' or current == 'cancelled')"
    )


def test_every_status_a_script_names_is_an_enum_value() -> None:
    values = {s.value for s in SessionStatus}
    named: set[str] = set()
    for name in SCRIPTS:
        script = getattr(session_runs, name)
        statuses = set(STATUS_PLACE.findall(script))
        assert statuses <= values, (name, statuses - values)
        named |= statuses
    assert named == values


def test_the_module_spells_no_status_in_its_lua_text() -> None:
    source = Path(session_runs.__file__).read_text()
    for status in SessionStatus:
        assert f"'{status.value}'" not in source, status
