"""A session's commands see its checkouts at their mountPaths, its home at /home/user and its
working directory where the spec says, inside the real sandbox (srt), each session its own."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.workers.session.runner.conftest import (
    Origin,
    hand_over,
    hookspawn_web,
    runner_settings,
    running_runner,
    sandbox_file,
    write_agent,
)
from workers.session.runner.sandbox_paths import Bind, SandboxPaths, plan

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root")


def _meeting_place(shared_dir: Path) -> Path:
    """A host directory both sessions may write (a writable sandbox mount): where each leaves
    its token and waits for the other's, so their setups overlap."""
    meet = shared_dir / "meet"
    meet.mkdir()
    hand_over(meet)
    return meet


@needs_root
def test_concurrent_sessions_each_see_their_own_checkout_and_home(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    meet = _meeting_place(shared_dir)
    config = sandbox_file(
        shared_dir, mounts=[{"source": str(meet), "target": str(meet), "mode": "writable"}]
    )
    settings = runner_settings(redis_url, shared_dir, origin, sandbox_config=config)
    setup = (
        "t=$(cat /proc/sys/kernel/random/uuid); "
        "cd /workspace/widgets && ls /home/user > /dev/null; "
        'mkdir -p /home/user/.cache && echo "$t" > /home/user/.cache/x && echo "$t" > x; '
        f'touch {meet}/"$t"; while [ "$(ls {meet} | wc -l)" -lt 2 ]; do sleep 0.05; done; '
        '[ "$(cat /home/user/.cache/x)" = "$t" ] && [ "$(cat /workspace/widgets/x)" = "$t" ]; '
        'echo "$t $(pwd) $HOME" > /home/user/seen'
    )
    write_agent(settings.agents_dir, "twice", setup=[{"name": "own", "commands": [setup]}])
    with hookspawn_web(settings) as hs, running_runner(settings, concurrency=2):
        started = [hs.start("twice"), hs.start("twice")]
        ended = [hs.wait_status(s, "succeeded", "failed", timeout=90) for s in started]
    tokens = set()
    for session in ended:
        assert session["status"] == "succeeded", session
        root = Path(session["workspace"])
        token, pwd, home = (root / "home" / "user" / "seen").read_text().split()
        assert (pwd, home) == ("/workspace/widgets", "/home/user")
        assert (root / "home" / "user" / ".cache" / "x").read_text() == f"{token}\n"
        assert (root / "workspace" / "widgets" / "x").read_text() == f"{token}\n"
        own = "sandbox paths: /home, /workspace (the session's own)"
        assert own in session["logTail"]
        tokens.add(token)
    assert sorted(p.name for p in meet.iterdir()) == sorted(tokens)
    assert len(tokens) == 2


@needs_root
def test_the_harness_finds_what_setup_wrote_at_the_sandbox_paths(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    harness = (
        "cat /workspace/widgets/x /home/user/.cache/y > /home/user/found && "
        'echo "$(pwd) $HOME" >> /home/user/found'
    )
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=harness)
    setup = "echo x > /workspace/widgets/x && mkdir -p /home/user/.cache && echo y > ~/.cache/y"
    write_agent(settings.agents_dir, "paths", setup=[{"name": "write", "commands": [setup]}])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = hs.wait_status(hs.start("paths"), "succeeded", "failed", timeout=60)
    assert session["status"] == "succeeded", session
    found = Path(session["workspace"], "home", "user", "found").read_text()
    assert found == "x\ny\n/workspace/widgets /home/user\n"


def test_each_target_is_shown_by_its_shallowest_ancestor_hiding_nothing(tmp_path: Path) -> None:
    keep: list[Path | str] = [tmp_path, "/tmp", "/srv/cache", "/usr"]
    targets = ["/workspace/a", "/workspace/b", "/home/user", "/srv/app/", "/usr/src/x"]
    binds = plan(tmp_path / "root", targets, keep)
    assert binds == (
        Bind(tmp_path / "root/home", "/home"),
        Bind(tmp_path / "root/srv/app", "/srv/app"),
        Bind(tmp_path / "root/usr/src", "/usr/src"),
        Bind(tmp_path / "root/workspace", "/workspace"),
    )
    paths = SandboxPaths(binds)
    assert paths.inside(tmp_path / "root/workspace/a/src") == "/workspace/a/src"
    assert paths.inside(tmp_path / "root/srv/apple") is None
    assert paths.inside(tmp_path / "root") is None


def test_a_target_hiding_what_the_sandbox_needs_has_no_bind(tmp_path: Path) -> None:
    data = tmp_path / "data"
    hiding = f"{data} would hide {data}/workspaces, which the sandbox needs"
    with pytest.raises(ValueError, match=f"^{re.escape(hiding)}$"):
        plan(data / "workspaces/s", [str(data)], [data / "workspaces", "/tmp"])
    with pytest.raises(ValueError, match=r"^/tmp would hide /tmp, which the sandbox needs$"):
        plan(data / "workspaces/s", ["/tmp"], ["/tmp"])
    # beneath what it needs, a target is bound at itself
    assert plan(data, ["/tmp/x"], ["/tmp"]) == (Bind(data / "tmp/x", "/tmp/x"),)


@needs_root
def test_a_mount_path_holding_the_data_directory_leaves_the_session_host_paths(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    mount_path = str(settings.data_dir)  # where every session root lives
    mounts = (
        "mounts:\n  - kind: git\n    repository: acme/widgets\n"
        f"    mountPath: {mount_path}\n    auth: {{kind: none}}\n"
    )
    setup = 'echo "$(pwd) $HOME" > "$HOME/seen"'
    write_agent(
        settings.agents_dir, "deep", setup=[{"name": "s", "commands": [setup]}], mounts=mounts
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = hs.wait_status(hs.start("deep"), "succeeded", "failed", timeout=60)
    assert session["status"] == "succeeded", session
    root = Path(session["workspace"])
    home, checkout = root / "home" / "user", root / mount_path.lstrip("/")
    assert (home / "seen").read_text() == f"{checkout} {home}\n"
    assert (
        f"sandbox paths are host paths for this session: {mount_path} would hide {root}, "
        "which the sandbox needs"
    ) in session["logTail"]
