"""The setup snapshot cache: saved after setup, restored for the same key, missed on change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.workers.session.runner.conftest import (
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from workers.session.runner.snapshots import SnapshotCache, slot_of

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
