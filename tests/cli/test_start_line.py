"""`web` and `worker` say at start how many agents they loaded and from where, or that there are
none and what to do (`serve` prints the same line in its banner: test_quickstart)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hookspawn.redis_server import free_port
from tests.conftest import wait_for

pytestmark = pytest.mark.slow

CLI = Path(sys.executable).parent / "hookspawn"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / ".auto"


def started(args: list[str], cwd: Path, env: dict[str, str], expected: str) -> str:
    """Start `hookspawn ARGS`, wait for a log line holding `expected`, stop it; the log."""
    log = cwd / f"{args[0]}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(CLI), *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for(lambda: expected in log.read_text() or proc.poll() is not None, timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return log.read_text()


def argv(command: str) -> list[str]:
    if command == "web":
        return ["web", "--port", str(free_port())]
    return ["worker", "--concurrency", "1", "--pool", "solo"]


@pytest.mark.parametrize("command", ["web", "worker"])
def test_start_line_with_no_agents_says_what_to_do(
    tmp_path: Path, redis_url: str, command: str
) -> None:
    args = argv(command)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_REDIS_URL"] = redis_url
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_REDIS_URL"] = redis_url
    env["HOOKSPAWN_AGENTS_DIR"] = str(EXAMPLES)
    text = started(args, tmp_path, env, "loaded 3 agents")
    assert f"loaded 3 agents from {EXAMPLES}: fix-command, nightly-deps, pr-review" in text
