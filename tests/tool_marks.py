"""Tests that need a program hookspawn does not install itself (srt and what it runs, Chromium):
marked `needs(TOOL)` by where they are (NEEDS, listed like tests/suite_marks.py's places) or by
hand (`@pytest.mark.needs("srt")`), or asking at run time (`require("srt")`, from a helper every
such test goes through). Where the tool is missing from PATH the test is skipped, its reason
naming the tool and the set-up command, and the run's summary says what was skipped; with
HOOKSPAWN_TESTS_REQUIRE_ALL=1 (`.ci/run`) it fails instead. The tools, their binaries and what
each runs are hookspawn.cli.doctor's table, which `hookspawn doctor` reports."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from hookspawn.cli.doctor import BY_NAME, SETUP_COMMAND, missing
from tests.suite_marks import _within

#: under this variable (set to 1) a missing tool fails the tests that need it
REQUIRE_ALL = "HOOKSPAWN_TESTS_REQUIRE_ALL"

#: every skip for a missing tool starts with this (the summary counts them by it)
PREFIX = "missing tool"

#: tool → the places (as in tests/suite_marks.py) whose tests need it; the runner's tests ask
#: at run time instead: tests/workers/session/runner/conftest.py's sandbox_file
NEEDS: dict[str, tuple[str, ...]] = {
    "srt": (
        "workers/session/sandbox/test_confined.py",
        "workers/session/sandbox/test_network.py",
        "hookspawn/cli/test_demo_parts.py::test_the_demo_sandbox_is_srt_without_mounts_where_srt_works",
    ),
    # tests/hookspawn/web/ui/test_browser.py's `chromium` fixture says it of its tests
    "chromium": ("hookspawn/web/ui/test_overview_browser.py",),
}


def mark(item: pytest.Item) -> None:
    for tool, places in NEEDS.items():
        if _within(item.nodeid, places):
            item.add_marker(pytest.mark.needs(tool))


def reason(tools: tuple[str, ...]) -> str | None:
    """Why a test needing `tools` cannot run here, or None when it can."""
    lacking = missing(tools)
    if not lacking:
        return None
    names = ", ".join(tool.label for tool in lacking)
    return f"{PREFIX}: {names} not on PATH (install with {SETUP_COMMAND}, see README.md)"


def require(*tools: str) -> None:
    """Skip (under REQUIRE_ALL: fail) the running test when one of `tools` is missing."""
    for tool in tools:
        if tool not in BY_NAME:
            raise ValueError(f"unknown tool {tool!r}: hookspawn.cli.doctor.TOOLS has the names")
    why = reason(tools)
    if why is None:
        return
    if os.environ.get(REQUIRE_ALL) == "1":
        pytest.fail(f"{why}; {REQUIRE_ALL}=1 makes that a failure", pytrace=False)
    pytest.skip(why)


def setup(item: pytest.Item) -> None:
    tools = tuple(tool for marker in item.iter_markers("needs") for tool in marker.args)
    if tools:
        require(*tools)


def summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line: how many tests were skipped for which missing tools, and the set-up command."""
    counts: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        text = str(text).removeprefix("Skipped: ")
        if text.startswith(f"{PREFIX}: "):
            counts[text.removeprefix(f"{PREFIX}: ").split(" not on PATH", 1)[0]] += 1
    if counts:
        said = "; ".join(f"{n} for {tools}" for tools, n in sorted(counts.items()))
        terminalreporter.write_line(
            f"skipped for missing tools: {said}; {SETUP_COMMAND} installs them "
            f"({REQUIRE_ALL}=1 makes these failures)",
            yellow=True,
        )
