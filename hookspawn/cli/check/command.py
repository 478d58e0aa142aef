"""`hookspawn check DIR`: the report on the agent files (hookspawn.cli.check.report) with the
event-schema checks, then, when the files pass, what this machine lacks to run their harnesses."""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hookspawn.cli.settings import load_settings
from triggers.session.harness import PROGRAMS
from workers.settings import Settings

__all__ = ["check", "harness_warnings"]


def check(args: argparse.Namespace) -> int:
    from hookspawn.cli.check.report import ExtraCheck, run_check

    settings = load_settings()
    auto_dir = Path(args.dir) if args.dir else settings.agents_dir
    from hookspawn.cli.check.agent_lines import Locator

    locator = Locator(auto_dir)  # the event and unmounted checks read each file once
    extra: list[ExtraCheck] = []
    if not getattr(args, "no_event_schemas", False):
        from hookspawn.cli.check.event_checks import check_event_paths

        extra.append(functools.partial(check_event_paths, locator=locator))

    harnesses: dict[str, list[str]] = {}

    def note_harnesses(result: Any, _: Path) -> list[Any]:
        for agent in result.agents:
            harnesses.setdefault(agent.harness, []).append(agent.name)
        return []  # what this machine lacks is said apart: the files are not at fault

    code = run_check(
        auto_dir,
        as_json=args.json,
        secret_names=settings.secret_names,
        out=sys.stdout,
        extra_checks=[*extra, note_harnesses],
        strict=bool(getattr(args, "strict", False)),
        unmounted=settings.unmounted_capabilities,
        locate=locator.where,
    )
    # the JSON answer is about the files alone, and so is a run that found them at fault
    if not args.json and code == 0:
        for line in harness_warnings(settings, harnesses):
            print(f"hookspawn check: warning: {line}", file=sys.stderr)
    return code


def harness_warnings(settings: Settings, harnesses: Mapping[str, Sequence[str]]) -> list[str]:
    """For each harness the agents name that could not run on this machine (its program not
    on the session PATH, its model key unset), which agents it leaves without one."""
    from workers.session.runner.harness import SESSION_PATH, unavailable

    if settings.harness_command:
        return []  # HOOKSPAWN_HARNESS_COMMAND runs for every agent
    lines = []
    for harness, names in sorted(harnesses.items()):
        if harness not in PROGRAMS:
            continue
        problem = unavailable(harness, shutil.which(PROGRAMS[harness], path=SESSION_PATH), settings)
        if problem is not None:
            lines.append(
                f"harness {harness} of {', '.join(sorted(names))} cannot run on this machine: "
                f"{problem}"
            )
    return lines
