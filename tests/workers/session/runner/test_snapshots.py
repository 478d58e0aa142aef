"""The setup snapshot cache: saved after setup, restored for the same key, missed on change."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.workers.session.runner.conftest import (
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from workers.session.runner.snapshots import SnapshotCache, slot_of
from workers.session.runner.tree_copy import CopyBudgetExceeded, TreeCopy

MIB = 1024 * 1024

FILL = (
    'if [ -f "$HOME/.cache/deps/marker" ]; then echo restored > "$HOME/outcome"; '
    'else mkdir -p "$HOME/.cache/deps" && echo filled > "$HOME/.cache/deps/marker" '
    '&& echo filled > "$HOME/outcome"; fi'
)


def _setup(command: str = FILL, key: str = "deps-v1") -> list[dict[str, Any]]:
    return [
        {
            "name": "deps",
            "commands": [command],
            "cache": {"key": key, "paths": ["/home/user/.cache/deps"]},
        }
    ]


def test_a_later_session_with_the_same_key_restores_the_cached_paths(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "cached", setup=_setup())
    write_agent(settings.agents_dir, "changed-command", setup=_setup(FILL + "; true"))
    write_agent(settings.agents_dir, "bumped-key", setup=_setup(key="deps-v2"))
    with hookspawn_web(settings) as hs, running_runner(settings):
        sessions: dict[str, list[dict[str, Any]]] = {}
        for name in ("cached", "cached", "changed-command", "bumped-key"):
            session_id = hs.start(name)
            sessions.setdefault(name, []).append(hs.wait_status(session_id, "succeeded", "failed"))

    def outcome(session: dict[str, Any]) -> str:
        assert session["status"] == "succeeded", session
        return (Path(session["workspace"]) / "home" / "user" / "outcome").read_text().strip()

    first, second = sessions["cached"]
    assert outcome(first) == "filled"
    assert outcome(second) == "restored"
    assert first["snapshotKey"] == second["snapshotKey"]
    scope = "branch:acme/widgets@main"
    assert (first["snapshot"], first["snapshotScope"]) == ("saved", scope)
    assert (second["snapshot"], second["snapshotScope"]) == ("restored", scope)
    slot = slot_of(scope, first["snapshotKey"])
    assert (settings.data_dir / "snapshots" / slot / "home" / ".cache" / "deps").is_dir()
    assert f"snapshot {first['snapshotKey']}: restored from {scope}" in second["logTail"]
    assert "saved" in first["logTail"]
    assert "saved" not in second["logTail"]  # a hit keeps the snapshot's age: the TTL holds
    for name in ("changed-command", "bumped-key"):
        (session,) = sessions[name]
        assert session["snapshotKey"] != first["snapshotKey"]
        assert outcome(session) == "filled"
        assert f"snapshot {session['snapshotKey']}: miss" in session["logTail"]
        assert session["snapshot"] == "saved"


def test_the_cache_never_copies_through_a_link_out_of_the_session_root(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private").write_text("host file\n")
    home = workspace / "home" / "user"
    home.mkdir(parents=True)
    (home / ".cache").symlink_to(outside)
    (home / "kept").mkdir()
    (home / "kept" / "file").write_text("cached\n")
    os.mkfifo(home / "pipe")  # copied, it would block the save for good
    checkout = home / "src"
    checkout.mkdir()
    (checkout / "tracked").write_text("staged\n")
    cache = SnapshotCache(tmp_path / "snapshots")
    assert cache.save("k", home, workspace, ttl=60, record={"scope": "s"}, skip=[checkout])
    saved = tmp_path / "snapshots" / "k" / "home"
    assert sorted(p.name for p in saved.iterdir()) == [".cache", "kept"]
    assert (saved / ".cache").is_symlink()  # kept as a link, its target never read
    fresh = tmp_path / "fresh"
    (fresh / "home").mkdir(parents=True)
    (fresh / "home" / "user").symlink_to(outside)
    assert not cache.restore("k", fresh / "home" / "user", fresh, account=None, skip=())
    assert sorted(p.name for p in outside.iterdir()) == ["private"]
    # restored over a fresh home: never over the checkout staged there
    shutil.rmtree(home)
    (checkout).mkdir(parents=True)
    (checkout / "tracked").write_text("fresh\n")
    assert cache.restore("k", home, workspace, account=None, skip=[checkout])
    assert (home / "kept" / "file").read_text() == "cached\n"
    assert (checkout / "tracked").read_text() == "fresh\n"
    assert (home / ".cache").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["private"]


def _blocks(root: Path) -> int:
    """What `root` takes on disk, as `du` measures it (allocated blocks, a file linked several
    times once)."""
    done = subprocess.run(["du", "-s", "--block-size=1", str(root)], capture_output=True)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[0])


def _sparse_and_linked(home: Path) -> None:
    """A 2 GiB sparse file, and one 10 MiB file under 21 names (20 hard links)."""
    home.mkdir(parents=True)
    with (home / "sparse").open("wb") as sparse:
        sparse.write(b"head")
        sparse.seek(1024 * MIB)
        sparse.write(b"middle")
        sparse.truncate(2048 * MIB)
    (home / "deps").mkdir()
    (home / "deps" / "blob").write_bytes(os.urandom(10 * MIB))
    for n in range(20):
        os.link(home / "deps" / "blob", home / f"link{n}")


def _assert_kept(home: Path) -> None:
    sparse = home / "sparse"
    assert sparse.stat().st_size == 2048 * MIB
    assert sparse.stat().st_blocks * 512 < 1 * MIB  # its holes are holes still
    with sparse.open("rb") as read:
        assert read.read(4) == b"head"
        read.seek(1024 * MIB)
        assert read.read(6) == b"middle"
    blob = (home / "deps" / "blob").stat()
    assert blob.st_nlink == 21
    assert {(home / f"link{n}").stat().st_ino for n in range(20)} == {blob.st_ino}


def test_a_save_and_a_restore_keep_holes_and_hard_links(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    home = workspace / "home" / "user"
    _sparse_and_linked(home)
    blob = (home / "deps" / "blob").read_bytes()
    cache = SnapshotCache(tmp_path / "snapshots", save_limit=3 * 1024 * MIB)
    assert cache.save("k", home, workspace, ttl=60, record={"scope": "s"}, skip=())
    saved = tmp_path / "snapshots" / "k" / "home"
    _assert_kept(saved)
    assert _blocks(tmp_path / "snapshots") < 12 * MIB
    fresh = tmp_path / "fresh"
    restored = fresh / "home" / "user"
    restored.mkdir(parents=True)
    assert cache.restore("k", restored, fresh, account=None, skip=())
    _assert_kept(restored)
    assert (restored / "link7").read_bytes() == blob
    assert _blocks(fresh) < 12 * MIB


def test_a_home_past_the_snapshot_limit_is_not_saved_and_the_older_save_stays(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    home = workspace / "home" / "user"
    home.mkdir(parents=True)
    (home / "small").write_text("older\n")
    cache = SnapshotCache(tmp_path / "snapshots", save_limit=200 * MIB)
    assert cache.save("k", home, workspace, ttl=60, record={"scope": "s"}, skip=())
    (home / "small").unlink()
    shutil.rmtree(home)
    _sparse_and_linked(home)  # 2 GiB and 10 MiB as the disk limit counts them
    with pytest.raises(CopyBudgetExceeded) as refused:
        cache.save("k", home, workspace, ttl=60, record={"scope": "s"}, skip=())
    assert refused.value.budget == 200 * MIB
    assert "would take more than 200 MiB" in refused.value.message
    # nothing of the refused save is left: only the older one
    assert [p.name for p in (tmp_path / "snapshots").iterdir()] == ["k"]
    assert sorted(p.name for p in (tmp_path / "snapshots" / "k" / "home").iterdir()) == ["small"]
    assert _blocks(tmp_path / "snapshots") < 1 * MIB


def test_links_to_one_file_count_once_against_the_snapshot_limit(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    home = workspace / "home" / "user"
    home.mkdir(parents=True)
    (home / "blob").write_bytes(os.urandom(4 * MIB))
    for n in range(30):
        os.link(home / "blob", home / f"link{n}")
    assert SnapshotCache(tmp_path / "s", save_limit=5 * MIB).save(
        "k", home, workspace, ttl=60, record={}, skip=()
    )
    assert (tmp_path / "s" / "k" / "home" / "link29").stat().st_nlink == 31
    (home / "other").write_bytes(os.urandom(2 * MIB))
    with pytest.raises(CopyBudgetExceeded):
        SnapshotCache(tmp_path / "s", save_limit=5 * MIB).save(
            "k", home, workspace, ttl=60, record={}, skip=()
        )


def test_a_snapshot_past_the_restore_limit_is_not_restored(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    home = workspace / "home" / "user"
    _sparse_and_linked(home)
    cache = SnapshotCache(tmp_path / "snapshots", save_limit=3 * 1024 * MIB)
    assert cache.save("k", home, workspace, ttl=60, record={"scope": "s"}, skip=())
    fresh = tmp_path / "fresh"
    restored = fresh / "home" / "user"
    restored.mkdir(parents=True)
    bounded = SnapshotCache(tmp_path / "snapshots", restore_limit=200 * MIB)
    with pytest.raises(CopyBudgetExceeded) as refused:
        bounded.restore("k", restored, fresh, account=None, skip=())
    assert refused.value.copied == 0  # checked before anything was written
    assert list(restored.iterdir()) == []


def test_a_copy_keeps_modes_but_never_set_id_bits_nor_special_files(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "ro").mkdir(parents=True)
    (source / "ro" / "tool").write_text("#!/bin/sh\n")
    os.chmod(source / "ro" / "tool", 0o6755)
    os.chmod(source / "ro", 0o555)
    os.mkfifo(source / "pipe")
    (source / "link").symlink_to("ro/tool")
    copier = TreeCopy(None)
    copier.copy(source, tmp_path / "copy")
    copy = tmp_path / "copy"
    assert stat.S_IMODE((copy / "ro").stat().st_mode) == 0o555
    assert stat.S_IMODE((copy / "ro" / "tool").stat().st_mode) == 0o755
    assert os.readlink(copy / "link") == "ro/tool"
    assert sorted(p.name for p in copy.iterdir()) == ["link", "ro"]
    os.chmod(source / "ro", 0o755)
    os.chmod(copy / "ro", 0o755)
