"""A runner removes the files of sessions whose run records have expired and the setup snapshots
past their reuse window, and nothing else."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import redis

from tests.conftest import make_settings, wait_for
from workers import keys
from workers.session.runner.logs import log_path, workspace_path
from workers.session.runner.prune import SessionPruner
from workers.session.runner.roots import workspaces_root
from workers.session.runner.service import RunnerService
from workers.session.runner.snapshots import TRANSIENT_GRACE, SnapshotCache
from workers.session.runs import SessionRuns

KEY_FRESH = "1" * 32
KEY_STALE = "2" * 32
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
    runs.queue(session_id, workspace="/w", ttl=ttl)


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

    pruner = SessionPruner(redis_client, tmp_path, SnapshotCache(tmp_path / "snapshots"))
    assert pruner.prune_sessions() == [EXPIRED, NEVER_RECORDED]
    assert all(path.exists() for path in files[KEPT])
    assert not any(path.exists() for s in (EXPIRED, NEVER_RECORDED) for path in files[s])
    assert unrelated.is_dir()
    assert (outside / "precious").read_text() == "kept"
    assert pruner.prune_sessions() == []


def _workspace(root: Path) -> Path:
    """A session root whose cached path holds a read-only directory."""
    cached = root / "home" / "user" / ".cache" / "mod"
    cached.mkdir(parents=True)
    (cached / "module.go").write_text("package mod\n")
    os.chmod(cached, 0o555)
    return root


def _save(cache: SnapshotCache, slot: str, workspace: Path, *, ttl: float) -> bool:
    home = workspace / "home" / "user"
    return cache.save(slot, home, workspace, ttl=ttl, record={"scope": "s"}, skip=())


def test_snapshots_past_their_reuse_window_are_removed_and_nothing_else(tmp_path: Path) -> None:
    cache = SnapshotCache(tmp_path / "snapshots")
    workspace = _workspace(tmp_path / "ws")
    assert _save(cache, KEY_FRESH, workspace, ttl=3600)
    assert _save(cache, KEY_STALE, workspace, ttl=60)
    root = tmp_path / "snapshots"
    interrupted = root / f".{KEY_FRESH}.0123abcd"  # what a save cut short leaves
    interrupted.mkdir()
    in_progress = root / f".{KEY_STALE}.4567cdef"  # a save being written right now
    in_progress.mkdir()
    long_ago = time.time() - TRANSIENT_GRACE - 60
    os.utime(interrupted, (long_ago, long_ago))
    unrelated = root / "notes"
    unrelated.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("kept")
    (root / ("3" * 32)).symlink_to(outside)  # named like a snapshot: never followed
    os.utime(outside, (long_ago, long_ago))

    assert cache.prune(now=time.time() + 120) == [f".{KEY_FRESH}.0123abcd", KEY_STALE]
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [KEY_FRESH, f".{KEY_STALE}.4567cdef", "notes", "3" * 32]
    )
    assert (outside / "precious").read_text() == "kept"
    fresh = tmp_path / "fresh"
    (fresh / "home/user").mkdir(parents=True)
    assert cache.record(KEY_STALE, ttl=10**6) is None
    assert not cache.restore(KEY_STALE, fresh / "home/user", fresh, account=None, skip=())
    assert cache.record(KEY_FRESH, ttl=3600) is not None
    assert cache.restore(KEY_FRESH, fresh / "home/user", fresh, account=None, skip=())
    assert (fresh / "home/user/.cache/mod/module.go").read_text() == "package mod\n"
    assert cache.prune() == []


def test_a_snapshot_saved_without_an_expiry_is_kept_for_the_default_window(
    tmp_path: Path,
) -> None:
    root = tmp_path / "snapshots"
    day = 86400
    for key, age in ((KEY_FRESH, 6 * day), (KEY_STALE, 8 * day)):
        (root / key / "files").mkdir(parents=True)
        meta = {"savedAt": time.time() - age, "paths": []}
        (root / key / "snapshot.json").write_text(json.dumps(meta))
    assert SnapshotCache(root).prune() == [KEY_STALE]
    assert sorted(p.name for p in root.iterdir()) == [KEY_FRESH]


def test_a_runner_prunes_as_it_sweeps(redis_url: str, tmp_path: Path) -> None:
    settings = make_settings(redis_url=redis_url, data_dir=tmp_path, runner_lease_seconds=0.5)
    (tmp_path / "outside").mkdir()
    files = _session_files(tmp_path, EXPIRED)
    cache = SnapshotCache(tmp_path / "snapshots")
    assert _save(cache, KEY_STALE, _workspace(tmp_path / "ws"), ttl=0)
    assert _save(cache, KEY_FRESH, tmp_path / "ws", ttl=3600)
    service = RunnerService(settings, prune_every=0.2)
    sweeper = service.sweeper.start()
    try:
        wait_for(lambda: not any(path.exists() for path in files), timeout=10)
        wait_for(lambda: not (tmp_path / "snapshots" / KEY_STALE).exists(), timeout=10)
    finally:
        sweeper.stop()
        service.close()
        # the runner's own directory for session roots, made outside the private tmp_path
        shutil.rmtree(workspaces_root(settings), ignore_errors=True)
    assert (tmp_path / "snapshots" / KEY_FRESH / "snapshot.json").is_file()
