"""A runner removes the files of sessions whose run records have expired, and nothing else."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from tests.conftest import make_settings, wait_for
from workers import keys
from workers.runner_service import RunnerService
from workers.session_logs import log_path, workspace_path
from workers.session_prune import SessionPruner
from workers.session_runs import SessionRuns

KEPT = "hs-" + "a" * 32
EXPIRED = "hs-" + "b" * 32
NEVER_RECORDED = "hs-" + "c" * 32


def _session_files(data_dir: Path, session_id: str) -> list[Path]:
    """A checkout with a read-only directory and a symlink out, and the session's log."""
    workspace = workspace_path(data_dir, session_id)
    checkout = workspace / "workspace" / "widgets"
    (checkout / ".git" / "objects").mkdir(parents=True)
    (checkout / ".git" / "objects" / "pack").write_text("pack")
    (checkout / "link-out").symlink_to(data_dir / "outside")
    os.chmod(checkout / ".git" / "objects", 0o555)
    log = log_path(data_dir, session_id)
    log.parent.mkdir(parents=True)
    log.write_text("staging\n")
    return [workspace, log.parent]


def _queue(runs: SessionRuns, session_id: str, ttl: int) -> None:
    runs.queue(session_id, workspace="/w", snapshot_key="k", ttl=ttl)


def test_only_the_files_of_expired_sessions_are_removed(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("kept")
    runs = SessionRuns(redis_client)
    _queue(runs, KEPT, 3600)
    _queue(runs, EXPIRED, 1)
    files = {s: _session_files(tmp_path, s) for s in (KEPT, EXPIRED, NEVER_RECORDED)}
    unrelated = tmp_path / "workspaces" / "notes"
    unrelated.mkdir()
    wait_for(lambda: not redis_client.exists(keys.session_run(EXPIRED)), timeout=5)

    pruner = SessionPruner(redis_client, tmp_path)
    assert pruner.prune() == [EXPIRED, NEVER_RECORDED]
    assert all(path.exists() for path in files[KEPT])
    assert not any(path.exists() for s in (EXPIRED, NEVER_RECORDED) for path in files[s])
    assert unrelated.is_dir()
    assert (outside / "precious").read_text() == "kept"
    assert pruner.prune() == []


def test_a_runner_prunes_as_it_sweeps(redis_url: str, tmp_path: Path) -> None:
    settings = make_settings(redis_url=redis_url, data_dir=tmp_path, runner_lease_seconds=0.5)
    (tmp_path / "outside").mkdir()
    files = _session_files(tmp_path, EXPIRED)
    service = RunnerService(settings, prune_every=0.2)
    sweeper = service.sweeper.start()
    try:
        wait_for(lambda: not any(path.exists() for path in files), timeout=10)
    finally:
        sweeper.stop()
        service.close()
