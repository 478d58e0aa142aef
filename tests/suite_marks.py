"""How the suite is split: which tests are `stack` (full-stack: a real Redis and processes; the
rest are pure, `pytest -m "not stack"`), which are `slow` (left out of the quick loop,
`pytest -m "not slow"`), which are `serial`, and how pytest-xdist hands them to its workers.

The kinds are given by rule, never by a list of test paths:
- by the fixtures a test uses, directly or through other fixtures: a fixture says what it makes
  of its tests with `@marks_tests(...)` under its `@pytest.fixture` (the session's Redis makes
  them `stack`; a fixture starting `hookspawn web`, serve, a Celery worker in its own process,
  srt, chromium or a real harness makes them `slow`);
- by the folder a test lives in (FOLDERS: every test there is of those kinds);
- by the test itself: a test that starts such processes in its own body says so with
  `@pytest.mark.slow` (or the module's `pytestmark`), where it is written.

xdist's workers each take one unit of work at a time (a test, or a group kept together), the
biggest groups first:
- the `serial` tests are one group: one worker runs them one after another while the others
  run the rest (the fault scenarios kill and stop real processes, wait out leases);
- a module defining a module-scoped fixture is one group: its tests share what that fixture
  built (a stack, a schemathesis run), built once by the worker that runs them;
- every other test is a unit of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import pytest
from xdist.scheduler import LoadScopeScheduling

TESTS = Path(__file__).resolve().parent

#: the kinds a fixture or a folder can give
KINDS = ("slow", "serial", "stack")

#: folders every test of which is of these kinds
FOLDERS: dict[str, tuple[str, ...]] = {
    # fault scenarios: a whole cluster of processes, killed and restarted, leases waited out
    "faults/": ("slow", "serial", "stack"),
    # attacks on the real intake and API: each on a real Redis
    "hostile/": ("stack",),
    # the local runner: sessions in srt sandboxes, real git, real harness processes
    "workers/session/runner/": ("slow",),
}

_ATTRIBUTE = "_hookspawn_suite_marks"

F = TypeVar("F", bound=Callable[..., Any])


#: what a fixture can make its tests; `serial` goes by folder only, because xdist's controller,
#: which schedules, sees node ids and no fixtures
FIXTURE_KINDS = ("slow", "stack")


def marks_tests(
    *kinds: str, timeout: int | None = None, needs: tuple[str, ...] = ()
) -> Callable[[F], F]:
    """What a fixture makes every test using it: `kinds` (of FIXTURE_KINDS), a pytest-timeout
    limit in seconds (a fixture whose run is long on a loaded machine), the programs it `needs`
    (tests/tool_marks.py). Put it under `@pytest.fixture`."""
    unknown = set(kinds) - set(FIXTURE_KINDS)
    if unknown:
        raise ValueError(
            f"a fixture marks its tests {FIXTURE_KINDS}, not {sorted(unknown)}: serial tests "
            "go in a folder FOLDERS makes serial"
        )

    def declare(fixture: F) -> F:
        setattr(fixture, _ATTRIBUTE, (tuple(kinds), timeout, tuple(needs)))
        return fixture

    return declare


def _declared(item: pytest.Item) -> list[tuple[tuple[str, ...], int | None, tuple[str, ...]]]:
    """What the fixtures `item` uses (the ones it gets, its own overriding outer ones) declare."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    found = []
    for name in getattr(item, "fixturenames", ()):
        definitions = info.name2fixturedefs.get(name)
        if definitions:
            declared = getattr(definitions[-1].func, _ATTRIBUTE, None)
            if declared is not None:
                found.append(declared)
    return found


def _where(nodeid: str) -> str:
    return nodeid.removeprefix("tests/")


def _within(nodeid: str, places: tuple[str, ...]) -> bool:
    """A folder (`x/`) holds the test; a module or test names it, or a parametrization."""
    where = _where(nodeid)
    return any(
        where.startswith(place if place.endswith("/") else (f"{place}::", f"{place}["))
        or where == place
        for place in places
    )


def _by_folder(nodeid: str) -> set[str]:
    return {
        kind for folder, given in FOLDERS.items() if _within(nodeid, (folder,)) for kind in given
    }


def kinds(item: pytest.Item) -> set[str]:
    """The kinds `item` is of by its folder and its fixtures."""
    found = _by_folder(item.nodeid)
    for declared, _, _ in _declared(item):
        found.update(declared)
    return found


def mark(item: pytest.Item) -> None:
    if item.get_closest_marker("serial") is not None and "serial" not in _by_folder(item.nodeid):
        raise pytest.UsageError(
            f"{item.nodeid} is marked serial by hand: serial tests go in a folder FOLDERS "
            "(tests/suite_marks.py) makes serial, so that xdist schedules them together"
        )
    for kind in sorted(kinds(item)):
        if item.get_closest_marker(kind) is None:
            item.add_marker(getattr(pytest.mark, kind))
    declared = _declared(item)
    limits = [seconds for _, seconds, _ in declared if seconds is not None]
    if limits and item.get_closest_marker("timeout") is None:
        item.add_marker(pytest.mark.timeout(max(limits)))
    tools = sorted({tool for _, _, needs in declared for tool in needs})
    if tools:
        item.add_marker(pytest.mark.needs(*tools))


#: a fixture decorator with a module or class scope, in a test module's source
_SHARED_FIXTURE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|class|package)[\"']")


@cache
def _shares_a_fixture(module: str) -> bool:
    """Whether the test module `module` (a node id's path) defines a fixture its tests share."""
    try:
        source = (TESTS.parent / module).read_text()
    except OSError:
        return False
    return _SHARED_FIXTURE.search(source) is not None


def unit(nodeid: str) -> str:
    """The unit of work `nodeid` goes to an xdist worker in (decided on xdist's controller,
    which has the node ids only: from the folder and the module's source)."""
    if "serial" in _by_folder(nodeid):
        return "serial"
    module = nodeid.split("::", 1)[0]
    if _shares_a_fixture(module):
        return module
    return nodeid


class SuiteScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scope scheduling (one unit at a time per worker, the units with the most
    tests first) over the units above, the `serial` group handed out first: it is the longest
    and runs on one worker only, so it starts while the others share everything else."""

    def _split_scope(self, nodeid: str) -> str:
        return unit(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        if "serial" in self.workqueue:
            self.workqueue.move_to_end("serial", last=False)
        super()._assign_work_unit(node)


def scheduler(config: pytest.Config, log: Any) -> SuiteScheduling:
    return SuiteScheduling(config, log)
