"""What a session takes on the host disk, through the real runner under srt: sparse files and
hard links count as a copy of them would take and never multiply in a snapshot, a snapshot
past HOOKSPAWN_SNAPSHOT_LIMIT is not saved, and the commands' TMPDIR and the harness count
towards HOOKSPAWN_SESSION_DISK_LIMIT."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import wait_for
from tests.workers.session.runner.conftest import (
    Hookspawn,
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from workers.session.runner.snapshots import slot_of

MIB = 1024 * 1024


def _ended(hs: Hookspawn, session_id: str) -> dict[str, Any]:
    return hs.wait_status(session_id, "succeeded", "failed", "cancelled", timeout=120)


def _failure(session: dict[str, Any]) -> tuple[str, str | None]:
    return session["status"], (session.get("failure") or {}).get("code")


def _blocks(root: Path) -> int:
    """What `root` takes on disk, as `du` measures it (allocated blocks, a file linked several
    times once); 0 when it is not there."""
    if not root.exists():
        return 0
    done = subprocess.run(["du", "-s", "--block-size=1", str(root)], capture_output=True)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[0])


def _cached(commands: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "name": "deps",
            "commands": commands,
            "cache": {"key": "deps-v1", "paths": ["/home/user/.cache/deps"]},
        }
    ]


#: one 10 MiB file under 21 names in the home
LINKS = (
    'mkdir -p "$HOME/.cache/deps"; head -c 10485760 /dev/urandom > "$HOME/.cache/deps/blob"; '
    'for i in $(seq 20); do ln "$HOME/.cache/deps/blob" "$HOME/.cache/deps/link$i"; done'
)


#: says whether it found its cache restored (`restored`) or filled it (`filled`)
FILL = (
    'if [ -f "$HOME/.cache/deps/marker" ]; then echo restored > "$HOME/outcome"; '
    'else mkdir -p "$HOME/.cache/deps" && echo filled > "$HOME/.cache/deps/marker" '
    '&& echo filled > "$HOME/outcome"; fi'
)


def _home(session: dict[str, Any]) -> Path:
    return Path(session["workspace"]) / "home" / "user"


def test_a_sparse_file_and_hard_links_never_make_a_snapshot_past_the_disk_limit(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="200M")
    sparse = 'truncate -s 2G "$HOME/.cache/deps/sparse"'
    write_agent(settings.agents_dir, "sparse", setup=_cached([LINKS, sparse]))
    with hookspawn_web(settings) as hs, running_runner(settings):
        first = _ended(hs, hs.start("sparse"))
        again = _ended(hs, hs.start("sparse"))
    for session in (first, again):
        assert _failure(session) == ("failed", "disk_limit_exceeded"), session
        assert "past HOOKSPAWN_SESSION_DISK_LIMIT (200 MiB)" in session["failure"]["message"]
        assert ": saved" not in session["logTail"]
    assert _blocks(settings.data_dir / "snapshots") < 150 * MIB


def test_hard_links_and_holes_are_kept_through_a_snapshot_and_its_restore(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="200M")
    # 10 MiB under 21 names and a 100 MiB sparse file: 110 MiB counted, 10 MiB held
    sparse = 'truncate -s 100M "$HOME/.cache/deps/sparse"'
    write_agent(settings.agents_dir, "linked", setup=_cached([LINKS, sparse]))
    with hookspawn_web(settings) as hs, running_runner(settings):
        first = _ended(hs, hs.start("linked"))
        second = _ended(hs, hs.start("linked"))
    assert first["status"] == "succeeded", first
    assert (first["snapshot"], second["snapshot"]) == ("saved", "restored"), (first, second)
    assert _blocks(settings.data_dir / "snapshots") < 15 * MIB
    deps = _home(second) / ".cache" / "deps"
    blob = (deps / "blob").stat()
    assert blob.st_nlink == 21
    assert {(deps / f"link{i}").stat().st_ino for i in range(1, 21)} == {blob.st_ino}
    held = (deps / "sparse").stat()
    assert (held.st_size, held.st_blocks) == (100 * MIB, 0)


def test_a_snapshot_past_the_snapshot_limit_is_not_saved_and_the_session_goes_on(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(
        redis_url, shared_dir, origin, session_disk_limit="200M", snapshot_limit="20M"
    )
    fill = 'mkdir -p "$HOME/.cache/deps"; head -c 30000000 /dev/urandom > "$HOME/.cache/deps/b"'
    write_agent(settings.agents_dir, "large-cache", setup=_cached([fill]))
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("large-cache"))
    assert session["status"] == "succeeded", session
    why = "the home holds more than HOOKSPAWN_SNAPSHOT_LIMIT (20 MiB)"
    assert session["snapshot"] == f"not saved: {why}"
    assert f"snapshot {session['snapshotKey']}: not saved: {why}" in session["logTail"]
    snapshots = settings.data_dir / "snapshots"
    assert not snapshots.exists() or list(snapshots.iterdir()) == []


def test_a_snapshot_holding_more_than_the_disk_limit_is_not_restored(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="20M")
    write_agent(settings.agents_dir, "cached", setup=_cached([FILL]))
    with hookspawn_web(settings) as hs, running_runner(settings):
        first = _ended(hs, hs.start("cached"))
        assert first["snapshot"] == "saved", first
        scope = first["snapshotScope"]
        saved = settings.data_dir / "snapshots" / slot_of(scope, first["snapshotKey"])
        # as an older hookspawn (or a larger HOOKSPAWN_SNAPSHOT_LIMIT) could have saved it
        with (saved / "home" / ".cache" / "deps" / "sparse").open("wb") as sparse:
            sparse.truncate(1024 * MIB)
        second = _ended(hs, hs.start("cached"))
    assert second["status"] == "succeeded", second
    key = second["snapshotKey"]
    assert key == first["snapshotKey"]
    assert (
        f"snapshot {key} in {scope}: not restored, it holds more than "
        "HOOKSPAWN_SESSION_DISK_LIMIT (20 MiB)"
    ) in second["logTail"]
    assert (_home(second) / "outcome").read_text() == "filled\n"
    assert not (_home(second) / ".cache" / "deps" / "sparse").exists()
    # saved afresh in its place
    assert second["snapshot"] == "saved"
    assert not (saved / "home" / ".cache" / "deps" / "sparse").exists()


def test_a_setup_filling_its_tmpdir_past_the_disk_limit_fails(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="200M")
    fill = (
        'echo "$TMPDIR" > "$HOME/tmpdir"; head -c 300000000 /dev/zero > "$TMPDIR/big"; '
        'sleep 45; touch "$HOME/after"'
    )
    write_agent(settings.agents_dir, "tmp-filler", setup=[{"name": "fill", "commands": [fill]}])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("tmp-filler"))
        assert _failure(session) == ("failed", "disk_limit_exceeded"), session
        workspace = Path(session["workspace"])
        # the commands' TMPDIR is in the session root, beside the home, and goes with the
        # session (removed as the run is closed, just after its end is recorded)
        assert (_home(session) / "tmpdir").read_text() == f"{workspace / '.tmp'}\n"
        wait_for(lambda: not (workspace / ".tmp").exists(), what="the session's TMPDIR removed")
    assert not (_home(session) / "after").exists()  # stopped while it ran


def test_a_harness_filling_the_session_root_past_the_disk_limit_is_stopped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    harness = 'head -c 40000000 /dev/zero > "$HOME/big"; sleep 45; touch "$HOME/after"'
    settings = runner_settings(
        redis_url, shared_dir, origin, session_disk_limit="20M", harness_command=harness
    )
    write_agent(settings.agents_dir, "harness-filler", setup=[])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("harness-filler"))
    assert _failure(session) == ("failed", "disk_limit_exceeded"), session
    message = session["failure"]["message"]
    assert "past HOOKSPAWN_SESSION_DISK_LIMIT (20 MiB)" in message
    assert "snapshot" not in message  # setup was over
    assert not (_home(session) / "after").exists()  # stopped while it ran
