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

xdist's workers each take one unit of work at a time (a test, or a group kept together):
- the `serial` tests (of a folder FOLDERS makes serial) are one group: one worker runs them one
  after another while the others run the rest; no folder needs it now: each fault scenario
  starts, kills and stops only processes of its own (its own redis-server, web and worker on
  ports of their own), so they run beside each other like any test;
- a module defining a module-scoped fixture is one group: its tests share what that fixture
  built (a stack, a schemathesis run), built once by the worker that runs them;
- every other test is a unit of its own.
The units holding `slow` tests go out spread over the first three quarters of the quick ones:
the suite's length is all its tests shared out over the workers, and a long test taken last
would leave the others idle while it runs; spread, rather than all first, so that the slow
tests, which start processes and fill the cores, run beside quick ones (taken together on a
busy machine they ran past their timeouts). Which tests are slow is known
on the workers only (marks come from fixtures): each worker writes the slow node ids it
collected to a file the controller named (`schedule_file`), read when the controller orders
the units.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterable
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
    # fault scenarios: a whole cluster of processes, killed and restarted, leases waited out;
    # each its own cluster, so they need not wait for one another
    "faults/": ("slow", "stack"),
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


#: the xdist worker input naming the file a worker writes its collected slow node ids to
SCHEDULE_INPUT = "hookspawn_slow_tests"


def schedule_file(config: pytest.Config) -> Path | None:
    """On a worker, where to write the slow node ids it collected (the controller named it)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or SCHEDULE_INPUT not in workerinput:
        return None
    return Path(workerinput[SCHEDULE_INPUT]) / f"{workerinput['workerid']}.json"


def record_slow(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker, after marking: the node ids of its slow tests, for the controller."""
    path = schedule_file(config)
    if path is not None:
        slow = [item.nodeid for item in items if item.get_closest_marker("slow") is not None]
        path.write_text(json.dumps(slow))


def read_slow(directory: Path) -> set[str]:
    """On the controller: the slow node ids its workers wrote (every worker collects alike)."""
    for path in sorted(directory.glob("*.json")):
        try:
            return set(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return set()


U = TypeVar("U", bound=Collection[str])

#: the slow units are spread over this first part of the quick ones: the quick units left
#: after them fill the workers while the last slow ones finish
SPREAD = 0.75


def _mixed(scope: str) -> str:
    """A fixed order unrelated to the path: tests of one folder (the fault scenarios, the
    runner's) start at different times rather than all at once."""
    return hashlib.sha256(scope.encode()).hexdigest()


def ordered(units: Iterable[tuple[str, U]], slow: set[str]) -> list[tuple[str, U]]:
    """The units (scope, node ids) in the order they go out: the `serial` group; then the quick
    units (the biggest groups first) with the units holding slow tests spread among their
    first SPREAD (the groups with the most slow tests first, then one by one in a mixed
    order), so that slow tests run beside quick ones rather than all together, and none is
    left for the end."""
    serial, heavy, light = [], [], []
    for scope, tests in units:
        slow_tests = sum(1 for nodeid in tests if nodeid in slow)
        if scope == "serial":
            serial.append((scope, tests))
        elif slow_tests:
            heavy.append((slow_tests, scope, tests))
        else:
            light.append((scope, tests))
    heavy.sort(key=lambda unit: (-unit[0] if unit[0] > 1 else 0, _mixed(unit[1])))
    light.sort(key=lambda unit: -len(unit[1]))
    out = list(serial)
    taken = 0
    for n, unit in enumerate(light):
        while taken < len(heavy) and taken / len(heavy) <= n / (SPREAD * len(light)):
            out.append(heavy[taken][1:])
            taken += 1
        out.append(unit)
    out += [unit[1:] for unit in heavy[taken:]]
    return out


class SuiteScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scope scheduling (one unit at a time per worker) over the units above: the
    `serial` group first (it runs on one worker only), then the units with the most slow tests,
    then the rest, the units with the most tests first."""

    def __init__(self, config: pytest.Config, log: Any, slow_dir: Path | None = None) -> None:
        super().__init__(config, log)
        self.slow_dir = slow_dir
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit(nodeid)

    def _order(self) -> None:
        slow = read_slow(self.slow_dir) if self.slow_dir is not None else set()
        units = ordered(self.workqueue.items(), slow)
        self.workqueue.clear()
        self.workqueue.update(units)
        self._ordered = True

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:
            self._order()
        super()._assign_work_unit(node)


def scheduler(config: pytest.Config, log: Any, slow_dir: Path | None = None) -> SuiteScheduling:
    return SuiteScheduling(config, log, slow_dir)
