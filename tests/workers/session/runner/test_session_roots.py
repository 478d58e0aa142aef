"""Session roots every runner account can use: HOOKSPAWN_WORKSPACES_DIR, the runner's own
directory when its user cannot enter the data directory, or a refusal at start."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.conftest import wait_for
from tests.workers.session.runner.conftest import (
    HOOKSPAWN,
    RUNNER_USER,
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    settings_env,
    write_agent,
)
from workers import keys
from workers.session.runner.command import account_of
from workers.session.runner.prune import SessionPruner
from workers.session.runner.roots import (
    WorkspacesUnavailable,
    can_enter,
    open_workspaces,
    scratch_parent,
    workspaces_root,
)
from workers.session.runner.service import RunnerService
from workers.session.runner.snapshots import SnapshotCache

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the runner user only differs from the runner under root"
)


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A directory only root may enter, as root's home is."""
    path = Path(tempfile.mkdtemp(prefix="hookspawn-private-"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_data_directory_the_runner_user_cannot_enter_gets_session_roots_elsewhere(
    redis_url: str, redis_client: redis.Redis, shared_dir: Path, origin: Origin, private_dir: Path
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, data_dir=private_dir / "data")
    write_agent(
        settings.agents_dir,
        "private",
        setup=[{"name": "build", "commands": ["echo built > built", "id -un"]}],
    )
    root = workspaces_root(settings)
    try:
        with hookspawn_web(settings) as hs, running_runner(settings) as service:
            session_id = hs.start("private")
            ended = hs.wait_status(session_id, "succeeded", "failed", timeout=60)
        assert ended["status"] == "succeeded", (ended["failure"], ended["logTail"])
        workspace = Path(ended["workspace"])
        assert workspace == root / session_id
        assert private_dir not in root.parents
        info = root.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o711)
        assert (workspace / "workspace" / "widgets" / "built").read_text() == "built\n"
        assert f"  | {RUNNER_USER}\n" in ended["logTail"]
        beside = [root / f"{session_id}.srt.json", root / f"{session_id}.gitconfig"]
        assert all(path.is_file() for path in beside)
        beside.append(root / f"{session_id}.tools")  # the session's credential helper
        assert (beside[-1] / "git-credential-hookspawn").is_file()
        # the runner's pruning finds them there once the session's record is gone
        redis_client.delete(keys.session_run(session_id))
        pruner = SessionPruner(
            redis_client,
            settings.data_dir,
            SnapshotCache(private_dir / "s"),
            service.runner.workspaces,
        )
        assert pruner.prune_sessions() == [session_id]
        assert not workspace.exists() and not any(path.exists() for path in beside)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_workspaces_dir_the_runner_user_cannot_enter_refuses_the_runner_at_start(
    redis_url: str, shared_dir: Path, origin: Origin, private_dir: Path
) -> None:
    roots = private_dir / "roots"
    settings = runner_settings(redis_url, shared_dir, origin, workspaces_dir=roots)
    with pytest.raises(WorkspacesUnavailable) as refused:
        RunnerService(settings)
    for named in (str(roots), repr(RUNNER_USER), "HOOKSPAWN_WORKSPACES_DIR"):
        assert named in refused.value.message
    started = subprocess.run(
        [str(HOOKSPAWN), "runner"],
        env={**settings_env(settings), "HOOKSPAWN_WORKSPACES_DIR": str(roots)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 2
    assert str(roots) in started.stderr and "HOOKSPAWN_WORKSPACES_DIR" in started.stderr


def test_a_workspaces_dir_is_where_session_roots_go(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, workspaces_dir=shared_dir / "roots")
    write_agent(settings.agents_dir, "placed")
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("placed")
        queued = hs.session(session_id)
        ended = hs.wait_status(session_id, "succeeded", "failed")
    assert ended["status"] == "succeeded", (ended["failure"], ended["logTail"])
    assert queued["workspace"] == ended["workspace"] == str(shared_dir / "roots" / session_id)
    wait_for(lambda: (shared_dir / "roots" / session_id / "workspace" / "widgets").is_dir())


def test_a_directory_someone_else_made_in_its_place_is_refused(
    redis_url: str, shared_dir: Path, origin: Origin, private_dir: Path
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, data_dir=private_dir / "data")
    root = workspaces_root(settings)
    nobody = pwd.getpwnam(RUNNER_USER)
    root.mkdir(mode=0o777)
    try:
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
        with pytest.raises(WorkspacesUnavailable, match="not a directory the runner owns"):
            open_workspaces(settings)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_srt_scratch_goes_where_the_runner_user_can_enter(
    private_dir: Path, shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = account_of(RUNNER_USER)
    assert account is not None
    assert scratch_parent(account, shared_dir) is None  # the system's temporary directory
    monkeypatch.setattr(tempfile, "tempdir", str(private_dir))  # TMPDIR private to root
    assert scratch_parent(account, shared_dir) == shared_dir
    assert can_enter(shared_dir, account) and not can_enter(private_dir / "below", account)
