"""`hookspawn check`: compile a .auto directory and print its diagnostics and agents."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import TextIO

from agents.compiler import compile_dir
from agents.model import CompileResult

__all__ = ["format_result", "run_check"]


def run_check(auto_dir: Path, *, as_json: bool, secret_names: Collection[str], out: TextIO) -> int:
    """Print every error and warning (and, on success, each agent); 1 on any error, else 0."""
    result = compile_dir(auto_dir, secret_names=secret_names)
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
