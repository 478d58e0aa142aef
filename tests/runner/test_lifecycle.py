"""Sessions run by the local runner, from start to their end, through real HTTP, Celery and git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import redis

from tests.runner.conftest import (
    RUNNER_USER,
    Origin,
    git,
    hookspawn_web,
    running_runner,
    runner_settings,
    write_agent,
)


def test_a_started_session_is_staged_set_up_and_succeeds(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "builder",
        setup=[{"name": "build", "commands": ["mkdir -p build", "echo built > build/out"]}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("builder")
        session = hs.wait_status(session_id, "succeeded", "failed")
    assert session["status"] == "succeeded", session
    assert session["failure"] is None
    workspace = Path(session["workspace"])
    assert workspace == (settings.data_dir / "workspaces" / session_id).absolute()
    checkout = workspace / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.main
    assert (checkout / "build" / "out").read_text() == "built\n"
    assert session["snapshotKey"]
    assert "setup build" in session["logTail"]
    assert set(session["times"]) >= {"queued", "staging", "setup", "running", "succeeded"}
