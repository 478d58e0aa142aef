"""The suite's own split (tests/suite_marks.py): kinds by fixture and folder, xdist's units."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

from tests import suite_marks
from tests.suite_marks import marks_tests, ordered, read_slow, unit


def test_a_fixture_cannot_make_its_tests_serial() -> None:
    # xdist's controller schedules by node id: serial goes by folder only
    with pytest.raises(ValueError, match="serial tests go in a folder"):
        marks_tests("serial")
    with pytest.raises(ValueError, match="not \\['quick'\\]"):
        marks_tests("quick")


def test_units_of_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # a module sharing a module-scoped fixture together
    assert unit("tests/hostile/test_openapi.py::test_x[a]") == "tests/hostile/test_openapi.py"
    # every other test on its own, the fault scenarios (each its own cluster) included
    assert unit("tests/test_layering.py::test_x") == "tests/test_layering.py::test_x"
    assert (
        unit("tests/faults/test_redis_kill.py::test_x") == "tests/faults/test_redis_kill.py::test_x"
    )
    # the tests of a folder made serial go together
    monkeypatch.setitem(suite_marks.FOLDERS, "faults/", ("slow", "serial", "stack"))
    assert unit("tests/faults/test_redis_kill.py::test_x") == "serial"
    assert unit("tests/faults/test_worker_kill.py::test_y") == "serial"


def test_units_go_out_serial_first_and_the_slow_ones_spread_among_the_first_quick_ones() -> None:
    quick = [(f"q{n}.py::t", [f"q{n}.py::t"]) for n in range(8)]
    units = [
        *quick[:4],
        ("b.py", ["b.py::1", "b.py::2", "b.py::3"]),
        ("c.py::slow", ["c.py::slow"]),
        ("d.py", ["d.py::slow1", "d.py::slow2", "d.py::quick"]),
        ("serial", ["f.py::x"]),
        ("e.py::slow", ["e.py::slow"]),
        *quick[4:],
    ]
    slow = {"c.py::slow", "d.py::slow1", "d.py::slow2", "e.py::slow"}
    order = [scope for scope, _ in ordered(units, slow)]
    assert sorted(order) == sorted(scope for scope, _ in units)  # each unit once
    assert order[0] == "serial"
    # the group with the most slow tests first, then the quick ones, the biggest group first
    assert order[1:3] == ["d.py", "b.py"]
    # the other slow units apart, among the first three quarters of the quick ones: a quarter
    # of the quick ones come after the last of them
    first, last = sorted((order.index("c.py::slow"), order.index("e.py::slow")))
    assert last - first > 1
    quick_ones = [scope for scope in order if scope.startswith(("q", "b"))]
    assert len(order[last + 1 :]) >= len(quick_ones) // 4
    assert set(order[last + 1 :]) <= set(quick_ones)


def test_xdist_still_has_what_the_schedule_builds_on(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SuiteScheduling reaches into pytest-xdist's LoadScopeScheduling (pinned to its minor in
    pyproject.toml): the `workqueue` it reorders (scope → tests, in the order units go out)
    and the two methods it overrides. A newer xdist that changed them fails here."""
    overridden = {"_split_scope": ["self", "nodeid"], "_assign_work_unit": ["self", "node"]}
    for method, parameters in overridden.items():
        found = inspect.signature(getattr(LoadScopeScheduling, method)).parameters
        assert list(found) == parameters, method
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"])  # as `-n 2` sets it
    schedule = suite_marks.scheduler(pytestconfig, None)
    assert isinstance(schedule.workqueue, dict) and not schedule.workqueue
    schedule.workqueue.update({"a.py::t": {"a.py::t": False}, "serial": {"f.py::x": False}})
    schedule._order()
    assert list(schedule.workqueue) == ["serial", "a.py::t"]


def test_the_workers_tell_the_controller_their_slow_tests(tmp_path: Path) -> None:
    assert read_slow(tmp_path) == set()  # no worker wrote: nothing is known slow
    (tmp_path / "gw1.json").write_text('["tests/x.py::test_a"]')
    assert read_slow(tmp_path) == {"tests/x.py::test_a"}


def test_this_worker_wrote_the_slow_tests_it_collected(request: pytest.FixtureRequest) -> None:
    path = suite_marks.schedule_file(request.config)
    if path is None:
        pytest.skip("run without xdist: no controller to tell which tests are slow")
    written = set(json.loads(path.read_text()))
    selected = {item.nodeid for item in request.session.items}
    slow = {i.nodeid for i in request.session.items if i.get_closest_marker("slow") is not None}
    assert slow <= written
    assert request.node.nodeid not in written and request.node.nodeid in selected


def test_what_a_fixture_declares_reaches_its_tests(request: pytest.FixtureRequest) -> None:
    # this test asks for no Redis: not stack; the session's Redis fixture makes its users stack
    assert request.node.get_closest_marker("stack") is None
    assert request.node.get_closest_marker("slow") is None


def test_the_sessions_redis_makes_a_test_stack(
    request: pytest.FixtureRequest, redis_url: str
) -> None:
    assert redis_url.startswith("redis://")
    assert request.node.get_closest_marker("stack") is not None
