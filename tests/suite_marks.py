"""How the suite is split: which tests are `stack` (full-stack: real Redis and processes; the
rest are pure, `pytest -m "not stack"`), which are `slow` (left out of the quick loop,
`pytest -m "not slow"`), which are `serial`, and how pytest-xdist hands them to its workers.

Listed by where the tests are (a folder `x/`, a module, or one test), so a new test in a
listed place is marked too. xdist's workers each take one unit of work at a time (a test, or
a group kept together), biggest groups first:
- the `serial` tests are one group: one worker runs them one after another while the others
  run the rest (the fault scenarios kill and stop real processes, wait out leases);
- a module of `SHARED` is one group: its tests share a module-scoped fixture (a stack, a
  schemathesis run), built once by the worker that runs them;
- every other test is a unit of its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

SERIAL = ("faults/",)

#: modules whose tests share a module-scoped fixture
SHARED = (
    "hostile/test_openapi.py",
    "hostile/test_corpus.py",
    "hostile/test_connection_limits.py",
    "test_compose.py",
)

#: pytest-timeout's limit (seconds) for tests that can pass the default 120 s beside the other
#: workers on a loaded machine: a module whose fixture is a long CPU-bound run (schemathesis'
#: hundreds of generated requests; its first test pays for it), the real harnesses' sessions
TIMEOUTS = {
    "hostile/test_openapi.py": 360,
    # the real Claude Code and Codex: each starts in seconds, many more on a loaded machine
    "workers/session/runner/test_real_harness.py": 300,
}

#: whole process trees (`serve`, the local runner, srt sandboxes, real git, chromium, the CLI
#: over every example), every example payload, fuzzing and property runs: each takes seconds
#: to a minute; the quick loop leaves them out
SLOW = (
    "faults/",
    "hostile/test_openapi.py",
    "hostile/test_intake_fuzz.py",
    "hostile/test_connection_limits.py",
    "hostile/test_agent_files.py",
    "hookspawn/web/ui/test_browser.py",
    "hookspawn/web/ui/test_overview_browser.py",
    "hookspawn/web/test_processes.py",
    "workers/session/broker/test_web_processes.py",
    "test_fresh_machine.py::test_without_the_programs_pytest_passes_and_names_what_it_skipped",
    "workers/session/sandbox/test_confined.py",
    "workers/session/sandbox/test_cli.py::TestProbe",
    "workers/session/runner/",
    "workers/session/broker/test_real_git.py",
    "workers/session/broker/test_broker_listener.py::test_from_inside_srt_the_broker_host_reaches_no_admin_route",
    "workers/session/broker/test_credential_helper.py",
    "workers/session/broker/test_failed_authentications.py",
    "workers/session/broker/test_tool_argument_paths.py::test_no_tool_argument_leaves_its_endpoint",
    "hookspawn/cli/test_init.py",
    "hookspawn/cli/test_cli_behaviour.py::test_piped_into_head_ends_quietly",
    "hookspawn/cli/test_check.py::test_the_examples_pass_strict",
    "hookspawn/schema_check/test_example_paths.py",
    "hookspawn/schema_check/test_event_schemas.py::test_models_are_imported_per_event_in_use",
    "agents/test_report.py::test_cli_check_runs_on_the_examples",
    "agents/test_schema_agreement.py::test_schema_and_compiler_agree_on_generated_values",
    "test_examples.py",
    "templating/test_properties.py::test_compile_and_render_raise_only_template_errors",
    "templating/test_refs.py::test_every_accepted_ref_is_accepted_by_git",
)


def _within(nodeid: str, places: tuple[str, ...]) -> bool:
    """A folder (`x/`) holds the test; a module or test names it, or a parametrization."""
    where = nodeid.removeprefix("tests/")
    return any(
        where.startswith(place if place.endswith("/") else (f"{place}::", f"{place}["))
        or where == place
        for place in places
    )


#: full-stack tests: they start real processes (hookspawn, a worker, srt) on a real Redis;
#: every test that asks for the `redis_url` fixture is one too
STACK = ("faults/", "hostile/")


def mark(item: pytest.Item) -> None:
    fixtures = getattr(item, "fixturenames", ())
    if "redis_url" in fixtures or _within(item.nodeid, STACK):
        item.add_marker(pytest.mark.stack)
    if _within(item.nodeid, SLOW):
        item.add_marker(pytest.mark.slow)
    if _within(item.nodeid, SERIAL):
        item.add_marker(pytest.mark.serial)
    for place, seconds in TIMEOUTS.items():
        if _within(item.nodeid, (place,)) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(seconds))


def unit(nodeid: str) -> str:
    """The unit of work `nodeid` goes to an xdist worker in."""
    if _within(nodeid, SERIAL):
        return "serial"
    module = nodeid.split("::", 1)[0]
    if _within(module, SHARED):
        return module
    return nodeid


class SuiteScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scope scheduling (one unit at a time per worker, the units with the most
    tests first) over the units above."""

    def _split_scope(self, nodeid: str) -> str:
        return unit(nodeid)


def scheduler(config: pytest.Config, log: Any) -> SuiteScheduling:
    return SuiteScheduling(config, log)
