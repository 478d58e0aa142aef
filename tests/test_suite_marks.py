"""The suite's own split (tests/suite_marks.py): kinds by fixture and folder, xdist's units."""

from __future__ import annotations

import pytest

from tests.suite_marks import marks_tests, unit


def test_a_fixture_cannot_make_its_tests_serial() -> None:
    # xdist's controller schedules by node id: serial goes by folder only
    with pytest.raises(ValueError, match="serial tests go in a folder"):
        marks_tests("serial")
    with pytest.raises(ValueError, match="not \\['quick'\\]"):
        marks_tests("quick")


def test_units_of_work() -> None:
    # the fault scenarios together; a module sharing a module-scoped fixture together
    assert unit("tests/faults/test_redis_kill.py::test_x") == "serial"
    assert unit("tests/hostile/test_openapi.py::test_x[a]") == "tests/hostile/test_openapi.py"
    # every other test on its own
    assert unit("tests/test_layering.py::test_x") == "tests/test_layering.py::test_x"


def test_what_a_fixture_declares_reaches_its_tests(request: pytest.FixtureRequest) -> None:
    # this test asks for no Redis: not stack; the session's Redis fixture makes its users stack
    assert request.node.get_closest_marker("stack") is None
    assert request.node.get_closest_marker("slow") is None


def test_the_sessions_redis_makes_a_test_stack(
    request: pytest.FixtureRequest, redis_url: str
) -> None:
    assert redis_url.startswith("redis://")
    assert request.node.get_closest_marker("stack") is not None
