"""The shipped table of webhook shapes describes the installed githubkit: its version is the
installed one, and events described live from githubkit's models have the same shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hookspawn.cli.check.event_schemas import EventSchemas
from hookspawn.cli.check.event_shapes import (
    LiveShapes,
    Shape,
    ShapeSource,
    ShapeTable,
    build_table,
    schemas_version,
    shapes,
    table_text,
)

#: events with actions, without, with a free-text action, nested objects and lists (each
#: imports its own models: the busiest events take seconds, so they are left out)
SAMPLE = ("ping", "push", "repository_dispatch", "star", "label", "check_suite")


@pytest.fixture(scope="module")
def live() -> LiveShapes:
    return LiveShapes()


def same_shapes(left: ShapeSource, right: ShapeSource, event: str) -> list[str]:
    """Where the two sources' shapes of the event differ (models matched as they are reached,
    whatever their names)."""
    problems: list[str] = []
    matched: dict[str, str] = {}

    def compare(a: Shape, b: Shape, where: str) -> None:
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)) or a.keys() != b.keys():
                problems.append(f"{where}: {a!r} against {b!r}")
            elif "u" in a:
                if len(a["u"]) != len(b["u"]):
                    problems.append(f"{where}: unions of {len(a['u'])} and {len(b['u'])}")
                for n, (x, y) in enumerate(zip(a["u"], b["u"], strict=False)):
                    compare(x, y, f"{where}|{n}")
            else:
                compare(a["l"], b["l"], f"{where}.*")
            return
        if a[:1].isupper() and b[:1].isupper():
            if matched.setdefault(a, b) != b:
                problems.append(f"{where}: {a} is {matched[a]} elsewhere, here {b}")
                return
            if a in visited:
                return
            visited.add(a)
            ma, mb = left.model(a), right.model(b)
            if ma.open != mb.open or ma.fields.keys() != mb.fields.keys():
                problems.append(f"{where}: the fields of {a} and {b} differ")
                return
            for key in ma.fields:
                compare(ma.fields[key], mb.fields[key], f"{where}.{key}")
        elif a != b:
            problems.append(f"{where}: {a} against {b}")

    visited: set[str] = set()
    va, vb = left.variants(event), right.variants(event)
    if va.keys() != vb.keys():
        return [f"{event}: actions {sorted(map(str, va))} against {sorted(map(str, vb))}"]
    for action, names in va.items():
        if len(names) != len(vb[action]):
            problems.append(f"{event} {action}: {len(names)} and {len(vb[action])} models")
        for a, b in zip(names, vb[action], strict=False):
            compare(a, b, f"{event}.{action}")
    return problems


def test_the_shipped_table_is_of_the_installed_githubkit(live: LiveShapes) -> None:
    table = ShapeTable.shipped()
    assert table.version == schemas_version(), "run scripts/build_event_shapes.py"
    assert table.events == live.events
    assert shapes() is not None and isinstance(shapes(), ShapeTable)


@pytest.mark.parametrize("event", SAMPLE)
def test_events_described_live_have_the_shipped_shapes(live: LiveShapes, event: str) -> None:
    assert same_shapes(live, ShapeTable.shipped(), event) == []


def test_a_difference_is_found(live: LiveShapes) -> None:
    table: dict[str, Any] = build_table_of(live, "ping")
    model = table["models"][table["events"]["ping"][""][0]]
    model["fields"]["zen"] = "number"
    assert same_shapes(live, ShapeTable(table), "ping") == [
        "ping.None.zen: {'u': ['unset', 'string', 'null']} against 'number'"
    ]


def build_table_of(live: LiveShapes, event: str) -> dict[str, Any]:
    """A table of the one event, as the generator would write it."""

    class One(LiveShapes):
        @property
        def events(self) -> frozenset[str]:
            return frozenset({event})

    table = build_table(One(live.package))
    assert json.loads(table_text(table)) == table
    return table


def test_live_shapes_give_the_same_verdicts(live: LiveShapes) -> None:
    shipped, described = EventSchemas(), EventSchemas(live)
    paths = (("checkSuite", "headBranch"), ("checkSuite", "pullRequests", "0", "id"), ("nope",))
    for path in paths:
        assert shipped.verdict("check_suite", "completed", path) == (
            described.verdict("check_suite", "completed", path)
        )
    assert not shipped.verdict("check_suite", "completed", ("nope",)).possible
