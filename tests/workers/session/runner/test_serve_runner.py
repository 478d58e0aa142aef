"""`hookspawn serve` with HOOKSPAWN_RUNNER=local starts the runner beside web and worker, and
stops it, with its sessions, when it stops."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import redis

from tests import loopback
from tests.conftest import wait_for
from tests.procs import cmdline, process_tree, start_serve, wait_serving
from tests.workers.session.runner.conftest import (
    Origin,
    git,
    runner_settings,
    settings_env,
    write_agent,
)
from workers.session.runs import SessionRuns

pytestmark = pytest.mark.slow


#: the harness every session of the test runs: a prompt saying "hold" keeps it running
HOLDING_HARNESS = "/bin/sh -c 'if grep -q hold; then exec sleep 600; fi'"


def test_serve_runs_sessions_with_the_runner_and_sigterm_stops_them_runner_stopped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    """serve with HOOKSPAWN_RUNNER=local runs a session to its end; then, with one running,
    serve's runner child says on serve's output what it does at SIGTERM and records that
    session `failed runner_stopped` before serve exits (serve waits its grace for it)."""
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=HOLDING_HARNESS)
    write_agent(settings.agents_dir, "served")
    env = {**settings_env(settings), "HOOKSPAWN_RUNNER_STOP_GRACE": "2s"}
    served = start_serve(shared_dir, env, "--concurrency", "1")
    serve, base, log = served.proc.popen, served.url, served.log
    try:
        wait_serving(served)
        commands = [cmdline(pid) for pid in process_tree(serve.pid)]
        assert any("hookspawn.cli runner" in line for line in commands), commands

        def start(prompt: str) -> str:
            body = {"initialPrompt": prompt}
            started = loopback.post(f"{base}/agents/served/sessions", json=body, timeout=10)
            assert started.status_code == 201, started.text
            return str(started.json()["id"])

        def status_of(session_id: str) -> dict[str, object]:
            found: dict[str, object] = loopback.get(
                f"{base}/sessions/{session_id}", timeout=5
            ).json()
            return found

        finished = start("review it")
        seen: dict[str, object] = {}

        def ended() -> bool:
            seen.update(status_of(finished))
            return seen.get("status") in ("succeeded", "failed", "cancelled")

        wait_for(ended, timeout=60)
        assert seen["status"] == "succeeded", seen
        checkout = Path(str(seen["workspace"])) / "workspace" / "widgets"
        assert git(checkout, "rev-parse", "HEAD") == origin.main

        held = start("hold on")
        wait_for(lambda: status_of(held).get("status") == "running", timeout=60)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
    text = log.read_text()
    assert "hookspawn runner: stopping: 1 session running, waiting up to 2 s" in text, text
    run = SessionRuns(redis.Redis.from_url(redis_url)).get(held)
    assert run is not None and run.status == "failed", run
    assert run.failure is not None and run.failure.code == "runner_stopped"
