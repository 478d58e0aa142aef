"""`hookspawn check`: compile a .auto directory and print its diagnostics and agents."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TextIO

from agents.compiler import compile_dir
from agents.errors import Diagnostic
from agents.model import CompileResult

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
    extra_checks: Sequence[ExtraCheck] = (),
    strict: bool = False,
) -> int:
    """Print every error and warning (and, on success, each agent); 1 on any error, else 0.

    `extra_checks` run on the compiled agents (even when some files failed to compile);
    `strict` turns every warning into an error.
    """
    result = with_extra(
        compile_dir(auto_dir, secret_names=secret_names), auto_dir, extra_checks, strict=strict
    )
    if as_json:
        body = {
            "ok": result.ok,
            "agents": [agent.to_json() for agent in result.agents],
            "environments": dict(result.environments),
            "errors": [d.to_json() for d in result.errors],
            "warnings": [d.to_json() for d in result.warnings],
        }
        out.write(json.dumps(body, indent=2, sort_keys=False) + "\n")
    else:
        out.write(format_result(result))
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


def format_result(result: CompileResult) -> str:
    lines = [str(d) for d in result.errors]
    lines += [f"{d.file}:{d.line}: warning: {d.path}: {d.message}" for d in result.warnings]
    if result.ok:
        for agent in result.agents:
            lines.append(
                f"{agent.name}: harness {agent.harness}, environment {agent.environment}, "
                f"{len(agent.triggers)} trigger{'s' if len(agent.triggers) != 1 else ''}, "
                f"event-dependent {'yes' if agent.event_dependent else 'no'}"
            )
        count = len(result.agents)
        lines.append(f"ok: {count} agent{'s' if count != 1 else ''} compiled")
    else:
        count = len(result.errors)
        lines.append(f"{count} error{'s' if count != 1 else ''}")
    return "".join(line + "\n" for line in lines)
