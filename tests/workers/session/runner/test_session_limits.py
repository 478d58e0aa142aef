"""A session's bounds through the real runner under srt: its cgroup (the environment's memory
and CPU, the process cap) and the disk limit on its session root."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.workers.session.broker.test_session_credentials import brokered_spec
from tests.workers.session.runner.conftest import (
    Hookspawn,
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from workers.errors import SessionFailed
from workers.session.runner.cgroup import CgroupsUnavailable, SessionCgroups
from workers.session.runner.limits import RunnerLimits, open_session_cgroups
from workers.session.runner.service import RunnerService


def _cgroups() -> SessionCgroups | None:
    try:
        return SessionCgroups.find()
    except CgroupsUnavailable:
        return None


CGROUPS = _cgroups()
needs_cgroups = pytest.mark.skipif(CGROUPS is None, reason="no cgroup can be made here")
#: the tests reading the kernel's limit files inside the sandbox read cgroup v1's
needs_v1 = pytest.mark.skipif(
    CGROUPS is None or CGROUPS.version != 1, reason="no cgroup v1 hierarchies here"
)


def _agent(agents_dir: Path, name: str, commands: list[str], resources: str = "") -> None:
    """An agent whose one setup entry runs `commands`, its environment's `resources` (a YAML
    flow mapping) set when given."""
    write_agent(agents_dir, name, setup=[{"name": "work", "commands": commands}])
    if resources:
        path = agents_dir / "agents" / f"{name}.yaml"
        text = path.read_text().replace("  setup: ", f"  resources: {resources}\n  setup: ", 1)
        path.write_text(text)


def _ended(hs: Hookspawn, session_id: str) -> dict[str, Any]:
    return hs.wait_status(session_id, "succeeded", "failed", "cancelled", timeout=90)


def _failure(session: dict[str, Any]) -> tuple[str, str | None]:
    return session["status"], (session.get("failure") or {}).get("code")


def _gone(session: dict[str, Any]) -> bool:
    """The session's cgroup was removed in every hierarchy."""
    assert CGROUPS is not None
    return not any((p / session["id"]).exists() for p in CGROUPS.parents.values())


#: a setup command recording, in $HOME, the session's cgroups and its limits as the kernel has
#: them (v1 files), and the address-space limit (which must stay unlimited: Node reserves a lot)
RECORD = (
    'grep -E ":(memory|pids|cpu):" /proc/self/cgroup > "$HOME/cgroups"; '
    'm=$(grep ":memory:" /proc/self/cgroup | cut -d: -f3); '
    'p=$(grep ":pids:" /proc/self/cgroup | cut -d: -f3); '
    'c=$(grep ":cpu:" /proc/self/cgroup | cut -d: -f3); '
    'cat "/sys/fs/cgroup/memory$m/memory.limit_in_bytes" > "$HOME/memory"; '
    'cat "/sys/fs/cgroup/pids$p/pids.max" > "$HOME/pids"; '
    'cat "/sys/fs/cgroup/cpu$c/cpu.cfs_quota_us" > "$HOME/quota"; '
    'ulimit -v > "$HOME/address-space"'
)

#: a setup command holding 300 MiB
HOG = 'python3 -c "b = bytearray(300 * 2**20); b[::4096] = b\\"x\\" * len(b[::4096])"'


@needs_v1
def test_a_normal_session_runs_in_a_cgroup_of_its_own_with_the_environments_resources(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    harness = '/bin/sh -c \'grep -E ":(memory|pids|cpu):" /proc/self/cgroup > "$HOME/harness"\''
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=harness)
    _agent(settings.agents_dir, "bounded", [RECORD], "{memoryMB: 256, cpuCount: 1}")
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("bounded"))
    assert session["status"] == "succeeded", session
    home = Path(session["workspace"]) / "home" / "user"
    lines = home.joinpath("cgroups").read_text().splitlines()
    assert len(lines) == 3
    made = f"/hookspawn/{os.getpid()}/{session['id']}"  # the runner is this process
    assert all(line.endswith(made) for line in lines), lines
    assert home.joinpath("harness").read_text().splitlines() == lines  # the harness too
    assert home.joinpath("memory").read_text().strip() == str(256 * 1024 * 1024)
    assert home.joinpath("pids").read_text().strip() == "512"
    assert home.joinpath("quota").read_text().strip() == "100000"
    assert home.joinpath("address-space").read_text().strip() == "unlimited"
    assert "cgroup: memory 256 MiB, 1 CPU, at most 512 processes" in session["logTail"]
    assert _gone(session)


@needs_v1
def test_a_session_run_as_root_cannot_lift_its_own_limits(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(
        redis_url, shared_dir, origin, runner_user="", session_max_processes=64
    )
    lift = (
        'p=$(grep ":pids:" /proc/self/cgroup | cut -d: -f3); f="/sys/fs/cgroup/pids$p/pids.max"; '
        'if echo max > "$f"; then echo lifted > "$HOME/outcome"; fi; '
        'if echo $$ > /sys/fs/cgroup/pids/cgroup.procs; then echo left >> "$HOME/outcome"; fi; '
        'cat "$f" >> "$HOME/outcome"'
    )
    _agent(settings.agents_dir, "lifter", [lift])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("lifter"))
    assert session["status"] == "succeeded", session
    outcome = Path(session["workspace"]) / "home" / "user" / "outcome"
    assert outcome.read_text() == "64\n"


@needs_cgroups
def test_a_setup_past_its_memory_limit_fails_and_the_runner_goes_on(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    _agent(settings.agents_dir, "hog", [HOG, 'touch "$HOME/after"'], "{memoryMB: 128}")
    _agent(settings.agents_dir, "modest", ['echo fine > "$HOME/fine"'], "{memoryMB: 128}")
    with hookspawn_web(settings) as hs, running_runner(settings):
        hog = _ended(hs, hs.start("hog"))
        modest = _ended(hs, hs.start("modest"))
    assert _failure(hog) == ("failed", "setup_failed"), hog
    assert "memory limit reached (memory 128 MiB" in hog["logTail"]
    assert "the kernel killed 1 process(es)" in hog["logTail"]
    assert not (Path(hog["workspace"]) / "home" / "user" / "after").exists()
    assert _gone(hog)
    assert modest["status"] == "succeeded", modest
    assert (Path(modest["workspace"]) / "home" / "user" / "fine").read_text() == "fine\n"


@needs_cgroups
def test_a_setup_starting_more_processes_than_the_cap_fails_and_leaves_none(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_max_processes=64)
    spawn = 'for i in $(seq 200); do sleep 120 & done; touch "$HOME/after"'
    _agent(settings.agents_dir, "spawner", [spawn])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("spawner"))
    assert _failure(session) == ("failed", "setup_failed"), session
    assert "at most 64 processes" in session["logTail"]
    assert not (Path(session["workspace"]) / "home" / "user" / "after").exists()
    assert _gone(session)


def test_without_a_cgroup_the_runner_says_so_at_start_and_in_each_session_log(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text("22 1 0:20 / /sys rw - sysfs sysfs rw\n")
    (proc / "cgroup").write_text("0::/\n")
    with caplog.at_level(logging.WARNING, logger="workers.session.runner.limits"):
        unavailable = open_session_cgroups(proc)
    assert isinstance(unavailable, CgroupsUnavailable)
    assert [r.getMessage() for r in caplog.records] == [
        "no cgroup per session, so environment resources (memoryMB, cpuCount) and "
        "HOOKSPAWN_SESSION_MAX_PROCESSES are not enforced: no cgroup v1 hierarchy for memory, "
        "pids, cpu and no cgroup v2 with memory, pids and cpu is mounted for this process"
    ]
    settings = runner_settings(redis_url, shared_dir, origin)
    _agent(settings.agents_dir, "unbounded", ['echo ran > "$HOME/ran"'], "{memoryMB: 128}")

    def without_cgroups(service: RunnerService) -> None:
        service.runner.limits = RunnerLimits(settings, unavailable)

    with hookspawn_web(settings) as hs, running_runner(settings, prepare=without_cgroups):
        session = _ended(hs, hs.start("unbounded"))
    assert session["status"] == "succeeded", session
    assert f"no cgroup, resources not enforced: {unavailable}" in session["logTail"]


def test_a_setup_filling_the_session_root_past_the_disk_limit_is_stopped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="20M")
    fill = 'head -c 40000000 /dev/urandom > "$HOME/big"; sleep 45; touch "$HOME/after"'
    _agent(settings.agents_dir, "filler", [fill])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("filler"))
    assert _failure(session) == ("failed", "disk_limit_exceeded"), session
    assert "past HOOKSPAWN_SESSION_DISK_LIMIT (20 MiB)" in session["failure"]["message"]
    # stopped while it ran, not once it was over
    assert not (Path(session["workspace"]) / "home" / "user" / "after").exists()


def test_a_snapshot_past_the_disk_limit_is_not_saved(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="20M")
    setup = [
        {
            "name": "deps",
            "commands": [
                'mkdir -p "$HOME/.cache/deps"; head -c 40000000 /dev/urandom > '
                '"$HOME/.cache/deps/blob"'
            ],
            "cache": {"key": "deps-v1", "paths": ["/home/user/.cache/deps"]},
        }
    ]
    write_agent(settings.agents_dir, "cached-filler", setup=setup)
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("cached-filler"))
    assert _failure(session) == ("failed", "disk_limit_exceeded"), session
    assert session["snapshotKey"]
    snapshots = settings.data_dir / "snapshots"
    assert not snapshots.exists() or list(snapshots.iterdir()) == []
    assert ": saved" not in session["logTail"]


def test_the_disk_limit_is_checked_before_a_snapshot_is_saved(
    redis_url: str, shared_dir: Path, origin: Origin, tmp_path: Path
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, session_disk_limit="1M")
    root = tmp_path / "workspace"
    root.mkdir()
    notes: list[str] = []
    limits = RunnerLimits(settings, CgroupsUnavailable("none here")).session(
        brokered_spec("s1"), root, stop=lambda: False, note=notes.append
    )
    limits.check_disk()  # an empty root: under the limit
    (root / "blob").write_bytes(b"x" * 2 * 1024 * 1024)
    with pytest.raises(SessionFailed) as failed:
        limits.check_disk()
    assert failed.value.code == "disk_limit_exceeded"
    assert "past HOOKSPAWN_SESSION_DISK_LIMIT (1 MiB)" in failed.value.message


@needs_cgroups
def test_a_runner_starting_removes_what_a_runner_killed_outright_left(tmp_path: Path) -> None:
    assert CGROUPS is not None
    # a runner starting in a test beside this one (the suite runs in parallel) removes a dead
    # runner's cgroups too, maybe before `sleep` enters them: then they are made again
    for _ in range(10):
        gone = subprocess.Popen(["true"])
        gone.wait()
        tops = [p.parent for p in CGROUPS.parents.values()]
        stale = [top / str(gone.pid) / "hs-left" for top in tops]
        for path in stale:
            path.mkdir(parents=True, exist_ok=True)
        procs = [os.open(path / "cgroup.procs", os.O_WRONLY) for path in dict.fromkeys(stale)]

        def enter(procs: list[int] = procs) -> None:
            for fd in procs:
                os.write(fd, b"0")

        try:
            left = subprocess.Popen(["sleep", "120"], preexec_fn=enter)
            break
        except subprocess.SubprocessError:
            continue
        finally:
            for fd in procs:
                os.close(fd)
    else:
        pytest.fail("the stale cgroups were removed before a process could enter them, 10 times")
    try:
        SessionCgroups.find()
        assert left.wait(10) == -9  # killed
        assert not any(path.parent.exists() for path in stale)
    finally:
        left.kill()
        left.wait()
