"""`hookspawn serve` with HOOKSPAWN_RUNNER=local starts the runner beside web and worker."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import redis

from tests import loopback
from tests.conftest import wait_for
from tests.procs import process_tree, start_serve, wait_serving
from tests.workers.session.runner.conftest import (
    Origin,
    git,
    runner_settings,
    settings_env,
    write_agent,
)
from workers.session.runs import SessionRuns

pytestmark = pytest.mark.slow


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_serve_runs_sessions_with_the_runner_on(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "served")
    env = settings_env(settings)
    del env["HOOKSPAWN_REDIS_URL"]  # serve's own embedded Redis
    served = start_serve(shared_dir, env, "--concurrency", "1")
    serve, base = served.proc.popen, served.url
    try:
        wait_serving(served)
        commands = [_cmdline(pid) for pid in process_tree(serve.pid)]
        assert any("hookspawn.cli runner" in line for line in commands), commands
        started = loopback.post(f"{base}/agents/served/sessions", json={}, timeout=10)
        assert started.status_code == 201, started.text
        session_id = started.json()["id"]
        seen: dict[str, object] = {}

        def ended() -> bool:
            seen.update(loopback.get(f"{base}/sessions/{session_id}", timeout=5).json())
            return seen.get("status") in ("succeeded", "failed", "cancelled")

        wait_for(ended, timeout=30)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(30)
    assert seen["status"] == "succeeded", seen
    checkout = Path(str(seen["workspace"])) / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.main


def test_sigterm_to_serve_stops_its_runners_sessions_runner_stopped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    """serve's runner child says what it does on serve's output and records its session
    `failed runner_stopped` before serve exits (serve waits its grace for it)."""
    settings = runner_settings(
        redis_url, shared_dir, origin, harness_command="/bin/sh -c 'exec sleep 600'"
    )
    write_agent(settings.agents_dir, "served")
    env = {**settings_env(settings), "HOOKSPAWN_RUNNER_STOP_GRACE": "2s"}
    served = start_serve(shared_dir, env, "--concurrency", "1")
    serve, base, log = served.proc.popen, served.url, served.log
    try:
        wait_serving(served)
        started = loopback.post(f"{base}/agents/served/sessions", json={}, timeout=10)
        session_id = started.json()["id"]

        def running() -> bool:
            found = loopback.get(f"{base}/sessions/{session_id}", timeout=5).json()
            return bool(found.get("status") == "running")

        wait_for(running, timeout=60)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
    text = log.read_text()
    assert "hookspawn runner: stopping: 1 session running, waiting up to 2 s" in text, text
    run = SessionRuns(redis.Redis.from_url(redis_url)).get(session_id)
    assert run is not None and run.status == "failed", run
    assert run.failure is not None and run.failure.code == "runner_stopped"
