"""`hookspawn check`: compile a .auto directory and print its diagnostics and agents."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TextIO

from agents.auto_dir import directory_problem, relative_openable
from agents.capability_defaults import capability_lines
from agents.compiler import compile_dir
from agents.errors import Diagnostic
from agents.import_resolver import FILE_PATH
from agents.model import CompileResult
from agents.unmounted import Locate, unmounted_check, unmounted_json, unmounted_line
from hookspawn.cli.check.snapshot_sharing import sharing_groups

__all__ = ["ExtraCheck", "format_result", "run_check", "with_extra"]

#: A check beyond compiling, supplied by the caller (the GitHub event-schema check lives at the
#: edge, so this package stays free of githubkit): (compiled set, .auto dir) → diagnostics.
ExtraCheck = Callable[[CompileResult, Path], Sequence[Diagnostic]]


def run_check(
    auto_dir: Path,
    *,
    as_json: bool,
    secret_names: Collection[str],
    out: TextIO,
    err: TextIO | None = None,
    extra_checks: Sequence[ExtraCheck] = (),
    strict: bool = False,
    unmounted: str = "default",
    locate: Locate | None = None,
) -> int:
    """Print every error and warning (and, on success, each agent); 1 on any error, else 0.

    `extra_checks` run on the compiled agents (even when some files failed to compile);
    `strict` turns every warning into an error. File names are printed as the user can open
    them from the current directory. A directory that is not a `.auto` directory at all is
    one line on `err` (exit 2). `unmounted`: the HOOKSPAWN_UNMOUNTED_CAPABILITIES setting,
    for each agent's account of what repositories no mount names would get (and the warning
    when a fork's pull request can start an agent that would write there); `locate` finds
    the line of a trigger for that warning (else the agent file's first line).
    """
    problem = directory_problem(auto_dir)
    if problem is not None:
        (err or sys.stderr).write(f"hookspawn check: {problem}\n")
        return 2
    checks = [*extra_checks, unmounted_check(unmounted, locate)]
    result = with_extra(
        compile_dir(auto_dir, secret_names=secret_names), auto_dir, checks, strict=strict
    )
    result = _openable_paths(result, auto_dir)
    if as_json:
        body = {
            "ok": result.ok,
            "agents": [agent.to_json() for agent in result.agents],
            "environments": {name: env.to_json() for name, env in result.environments.items()},
            "errors": [_json(d) for d in result.errors],
            "warnings": [_json(d) for d in result.warnings],
            "snapshots": [group.to_json() for group in sharing_groups(result.agents)],
            "unmounted": unmounted_json(result.agents, unmounted),
        }
        out.write(json.dumps(body, indent=2, sort_keys=False) + "\n")
    else:
        out.write(format_result(result, unmounted=unmounted))
    return 0 if result.ok else 1


def with_extra(
    result: CompileResult,
    auto_dir: Path,
    extra_checks: Sequence[ExtraCheck],
    *,
    strict: bool = False,
) -> CompileResult:
    """The result with the extra checks' diagnostics added (and warnings made errors if strict)."""
    errors = list(result.errors)
    warnings = list(result.warnings)
    for extra in extra_checks:
        for diagnostic in extra(result, auto_dir):
            (errors if diagnostic.severity == "error" else warnings).append(diagnostic)
    if strict:
        errors += [dataclasses.replace(d, severity="error") for d in warnings]
        warnings = []
    return dataclasses.replace(result, errors=tuple(errors), warnings=tuple(warnings))


def _openable_paths(result: CompileResult, auto_dir: Path) -> CompileResult:
    """Diagnostics name files relative to the `.auto` directory's name (`.auto/agents/a.yaml`);
    the user gets them as a path they can open from here."""
    root = Path(os.path.abspath(auto_dir))
    prefix = (auto_dir.name or auto_dir.resolve().name) + "/"
    # a file named inside a message (an import cycle, a missing import) ends at a space,
    # a parenthesis or a comma
    named = re.compile(r"(?<![\w./-])" + re.escape(prefix) + r"[^\s(),]+")

    def openable(shown: str) -> str:
        return relative_openable(root / shown[len(prefix) :])

    def fix(d: Diagnostic) -> Diagnostic:
        file = openable(d.file) if d.file.startswith(prefix) else d.file
        message = named.sub(lambda found: openable(found.group()), d.message)
        return dataclasses.replace(d, file=file, message=message)

    return dataclasses.replace(
        result,
        errors=tuple(fix(d) for d in result.errors),
        warnings=tuple(fix(d) for d in result.warnings),
    )


def _line(d: Diagnostic) -> str:
    """`FILE:LINE: field.path: message`, or `FILE:LINE: message` for a whole-file problem."""
    where = f"{d.file}:{d.line}: " + ("warning: " if d.severity == "warning" else "")
    return where + (d.message if d.path == FILE_PATH else f"{d.path}: {d.message}")


def _json(d: Diagnostic) -> dict[str, object]:
    body = d.to_json()
    if d.path == FILE_PATH:
        body["path"] = None
    return body


def format_result(result: CompileResult, *, unmounted: str = "default") -> str:
    lines = [_line(d) for d in result.errors]
    lines += [_line(d) for d in result.warnings]
    if result.ok:
        for agent in result.agents:
            lines.append(
                f"{agent.name}: harness {agent.harness}, environment {agent.environment}, "
                f"{len(agent.triggers)} trigger{'s' if len(agent.triggers) != 1 else ''}, "
                f"event-dependent {'yes' if agent.event_dependent else 'no'}"
            )
            lines += capability_lines(agent)
            lines.append(unmounted_line(agent, unmounted))
        lines += [line for group in sharing_groups(result.agents) for line in group.lines()]
        count = len(result.agents)
        lines.append(f"ok: {count} agent{'s' if count != 1 else ''} compiled")
    else:
        count = len(result.errors)
        lines.append(f"{count} error{'s' if count != 1 else ''}")
    return "".join(line + "\n" for line in lines)
