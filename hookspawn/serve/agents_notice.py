"""The start-up line of `serve`, `web` and `worker`: how many agents, from which directory, or
why there are none and what to do about it."""

from __future__ import annotations

import logging
import os
from collections.abc import Collection
from pathlib import Path

from agents import compile_dir
from agents.auto_dir import directory_problem

__all__ = ["agents_notice", "log_agents"]

_WHAT_TO_DO = (
    "write a starter set with `hookspawn init {dir}`, point HOOKSPAWN_AGENTS_DIR at your .auto "
    "directory, or try the example agents with `hookspawn serve --demo`"
)


def agents_notice(directory: Path, secret_names: Collection[str] = ()) -> tuple[int, str]:
    """(logging level, message) saying what a process starting on `directory` will work with."""
    shown = os.path.abspath(directory)
    problem = directory_problem(directory, absolute=True)
    if problem is not None:
        return logging.WARNING, (
            f"no agents loaded ({problem}): every delivery will fire nothing; "
            + _WHAT_TO_DO.format(dir=shown)
        )
    result = compile_dir(directory, secret_names=secret_names)
    count = len(result.agents)
    names = ", ".join(agent.name for agent in result.agents)
    loaded = f"loaded {count} agent{'s' if count != 1 else ''} from {shown}: {names}"
    if not result.ok:
        errors = len(result.errors)
        problems = (
            f"({errors} error{'s' if errors != 1 else ''}; the first: {result.errors[0]}); "
            f"`hookspawn check {shown}` lists them all"
        )
        if not count:
            return logging.ERROR, (
                f"no agents loaded: the agent files in {shown} do not compile {problems}"
            )
        # the files that compile are loaded; those that do not are left out
        return logging.ERROR, f"{loaded}; files that do not compile are left out {problems}"
    return logging.INFO, loaded


def log_agents(logger: logging.Logger, directory: Path, secret_names: Collection[str]) -> None:
    level, message = agents_notice(directory, secret_names)
    logger.log(level, "%s", message)
