"""`web` and `worker` say at start how many agents they loaded and from where, or that there are
none and what to do (`serve` prints the same line in its banner: test_quickstart)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hookspawn.serve.redis_server import free_port
from tests.conftest import wait_for
from tests.procs import environment, launch

pytestmark = pytest.mark.slow

CLI = Path(sys.executable).parent / "hookspawn"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / ".auto"


def started(args: list[str], cwd: Path, env: dict[str, str], expected: str) -> str:
    """Start `hookspawn ARGS`, wait for a log line holding `expected`, stop it; the log."""
    log = cwd / f"{args[0]}.log"
    proc = launch(args[0], [str(CLI), *args], env=env, log=log, cwd=cwd)
    try:
        wait_for(lambda: expected in log.read_text() or not proc.alive(), timeout=60)
    finally:
        proc.stop(30)
    return log.read_text()


def argv(command: str) -> list[str]:
    if command == "web":
        return ["web", "--port", str(free_port()), "--broker-port", str(free_port())]
    return ["worker", "--concurrency", "1", "--pool", "solo"]


@pytest.mark.parametrize("command", ["web", "worker"])
def test_start_line_with_no_agents_says_what_to_do(
    tmp_path: Path, redis_url: str, command: str
) -> None:
    args = argv(command)
    env = environment({"HOOKSPAWN_REDIS_URL": redis_url})
    text = started(args, tmp_path, env, "no agents loaded")
    line = next(line for line in text.splitlines() if "no agents loaded" in line)
    assert " WARNING " in line
    assert f"{tmp_path}/.auto: no such directory" in line
    assert "`hookspawn init" in line and "HOOKSPAWN_AGENTS_DIR" in line
    assert "`hookspawn serve --demo`" in line


@pytest.mark.parametrize("command", ["web", "worker"])
def test_start_line_names_the_agents_and_the_directory(
    tmp_path: Path, redis_url: str, command: str
) -> None:
    args = argv(command)
    env = environment({"HOOKSPAWN_REDIS_URL": redis_url, "HOOKSPAWN_AGENTS_DIR": str(EXAMPLES)})
    text = started(args, tmp_path, env, "loaded 3 agents")
    assert f"loaded 3 agents from {EXAMPLES}: fix-command, nightly-deps, pr-review" in text
