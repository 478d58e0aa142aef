"""The harness after setup, cancelling a session, and a runner killed mid-session."""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

from tests.conftest import wait_for
from tests.procs import alive
from tests.workers.session.runner.conftest import (
    Origin,
    hookspawn_web,
    runner_process,
    runner_settings,
    running_runner,
    write_agent,
)

#: a harness that records what it was given: its environment and standard input
RECORDING_HARNESS = (
    '/bin/sh -c \'cat > "$HOME/prompt"; env > "$HOME/env"; exit "${HARNESS_EXIT:-0}"\''
)


def _env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_the_harness_gets_the_session_and_its_exit_status_ends_it(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    secrets = shared_dir / "secrets.json"
    secrets.write_text(json.dumps({"api-key": "k-123"}))
    settings = runner_settings(
        redis_url, shared_dir, origin, harness_command=RECORDING_HARNESS, secrets_file=secrets
    )
    env = (
        "env:\n"
        "  API_KEY: {$secret: api-key}\n"
        "  MAYBE: {$secret: not-there, optional: true}\n"
        "  MODE: review\n"
    )
    write_agent(settings.agents_dir, "recorded", env=env)
    write_agent(settings.agents_dir, "failing", env="env:\n  HARNESS_EXIT: '4'\n")
    with hookspawn_web(settings) as hs, running_runner(settings):
        ok = hs.start("recorded", displayTitle="Title", initialPrompt="Do it.", message="hi")
        bad = hs.start("failing")
        done = hs.wait_status(ok, "succeeded", "failed")
        failed = hs.wait_status(bad, "succeeded", "failed")
    assert done["status"] == "succeeded", done
    home = Path(done["workspace"]) / "home" / "user"
    assert (home / "prompt").read_text() == "Do it."
    seen = _env_file(home / "env")
    assert seen["HOOKSPAWN_SESSION_ID"] == ok
    assert seen["HOOKSPAWN_SESSION_TITLE"] == "Title"
    assert seen["HOOKSPAWN_SESSION_PROMPT"] == "Do it."
    assert seen["HOOKSPAWN_SESSION_MESSAGE"] == "hi"
    assert seen["API_KEY"] == "k-123"
    assert seen["MODE"] == "review"
    assert "MAYBE" not in seen
    # root gives each session a mount namespace where its checkout is at its mountPath
    checkout = Path(done["workspace"]) / "workspace" / "widgets"
    assert seen["PWD"] == ("/workspace/widgets" if os.geteuid() == 0 else str(checkout))
    assert seen["HOME"] == ("/home/user" if os.geteuid() == 0 else str(home))
    assert seen["SANDBOX_RUNTIME"] == "1"  # srt ran it
    assert (failed["status"], failed["failure"]["code"]) == ("failed", "harness_failed")
    assert "status 4" in failed["failure"]["message"]


def _waiting_harness() -> tuple[str, bytes]:
    """A harness that keeps running until it is stopped, and the command line it ends up as
    (`sleep 600.N`, N of this test alone): the sandbox runs it in a pid namespace of its own,
    so it is found on the host by its command line, not by a pid it could write down."""
    line = f"sleep 600.{uuid.uuid4().int % 10**9}"
    return f"/bin/sh -c 'exec {line}'", line.replace(" ", "\0").encode() + b"\0"


def _running(cmdline: bytes) -> list[int]:
    """The live host processes whose command line is `cmdline`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == cmdline:
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if alive(pid)]


def test_cancel_kills_the_running_command_and_ends_cancelled(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    harness, cmdline = _waiting_harness()
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=harness)
    write_agent(settings.agents_dir, "waiting")
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("waiting")
        hs.wait_status(session_id, "running")
        wait_for(lambda: _running(cmdline), what="the harness running")
        answer = hs.http.post(f"/sessions/{session_id}/cancel")
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"id": session_id, "status": "running"}
        ended = hs.wait_status(session_id, "cancelled", "failed", "succeeded")
        again = hs.http.post(f"/sessions/{session_id}/cancel")
    assert ended["status"] == "cancelled"
    assert ended["failure"] is None
    wait_for(lambda: not _running(cmdline), what=lambda: f"still running: {_running(cmdline)}")
    assert again.status_code == 200
    assert again.json()["status"] == "cancelled"


def test_a_queued_session_cancelled_before_any_runner_takes_it_never_runs(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "queued")
    with hookspawn_web(settings) as hs:
        session_id = hs.start("queued")
        assert hs.session(session_id)["status"] == "queued"
        answer = hs.http.post(f"/sessions/{session_id}/cancel")
        assert answer.json() == {"id": session_id, "status": "cancelled"}
        with running_runner(settings) as service:
            assert service.runner.run(session_id) == "not queued"
        session = hs.session(session_id)
        missing = hs.http.post("/sessions/nope/cancel")
    assert session["status"] == "cancelled"
    assert not Path(session["workspace"]).exists()
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "session_not_found"


def test_a_runner_killed_mid_session_leaves_it_failed_runner_lost(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    harness, cmdline = _waiting_harness()
    settings = runner_settings(
        redis_url, shared_dir, origin, harness_command=harness, runner_lease_seconds=1.0
    )
    write_agent(settings.agents_dir, "orphaned")
    with hookspawn_web(settings) as hs:
        with runner_process(settings, shared_dir / "runner.log") as runner:
            session_id = hs.start("orphaned")
            hs.wait_status(session_id, "running")
            wait_for(lambda: _running(cmdline), what="the harness running")
            os.killpg(runner.pid, signal.SIGKILL)
            runner.popen.wait(10)
        # the harness died with its runner
        wait_for(lambda: not _running(cmdline), what=lambda: f"still running: {_running(cmdline)}")
        # no runner is left to sweep: reading the session settles it once its lease is out
        ended = hs.wait_status(session_id, "failed", "succeeded", "cancelled")
    assert ended["status"] == "failed"
    assert ended["failure"]["code"] == "runner_lost"


def test_sigterm_says_so_at_once_gives_a_grace_then_fails_the_session_runner_stopped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    """A real `hookspawn runner` with a long harness under srt: on SIGTERM it prints what it
    does while the session still runs (within its grace), then kills the harness and records
    `failed runner_stopped` before it exits: nothing is left `running`, no runner needed."""
    harness, cmdline = _waiting_harness()
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=harness)
    write_agent(settings.agents_dir, "stopped")
    log = shared_dir / "runner.log"
    with hookspawn_web(settings) as hs:
        with runner_process(settings, log, grace="20s") as runner:
            session_id = hs.start("stopped")
            hs.wait_status(session_id, "running")
            wait_for(lambda: _running(cmdline), what="the harness running")
            os.killpg(runner.pid, signal.SIGTERM)
            said = "stopping: 1 session running, waiting up to 20 s"
            wait_for(lambda: said in runner.log_text(), what=runner.tail)
            # said at once: within the grace the session still runs, its harness too
            assert hs.session(session_id)["status"] == "running"
            assert _running(cmdline)
            runner.popen.wait(60)
            assert runner.popen.returncode == 0, runner.tail()
        ended = hs.session(session_id)  # read at once: recorded by the runner itself
        assert not _running(cmdline)
    assert ended["status"] == "failed", ended
    assert ended["failure"]["code"] == "runner_stopped"
    assert "20 s grace" in ended["failure"]["message"]
    text = runner.log_text()
    assert text.index(said) < text.index("still running after 20 s: stopped")
    session_log = (settings.data_dir / "sessions" / session_id / "log").read_text()
    assert "failed: runner_stopped:" in session_log


def test_sigterm_lets_a_session_that_ends_within_the_grace_end_on_its_own(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    gated = "/bin/sh -c 'echo begins; while [ ! -f \"$HOME/go\" ]; do sleep 0.05; done; echo ends'"
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=gated)
    write_agent(settings.agents_dir, "finishing")
    with hookspawn_web(settings) as hs:
        with runner_process(settings, shared_dir / "runner.log", grace="5m") as runner:
            session_id = hs.start("finishing")
            running = hs.wait_status(session_id, "running")
            os.killpg(runner.pid, signal.SIGTERM)
            said = "stopping: 1 session running, waiting up to 300 s"
            wait_for(lambda: said in runner.log_text(), what=runner.tail)
            # a new session is not taken while the runner stops: it stays queued
            later = hs.start("finishing")
            (Path(running["workspace"]) / "home" / "user" / "go").write_text("")
            runner.popen.wait(60)
            assert runner.popen.returncode == 0, runner.tail()
        assert hs.session(session_id)["status"] == "succeeded"
        assert hs.session(later)["status"] == "queued"
    assert "every session ended within the grace" in runner.log_text()


def test_the_harness_command_is_a_shell_command_line(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    """`HOOKSPAWN_HARNESS_COMMAND` runs through `/bin/sh -c`: `$(…)`, `$VAR` and pipes work."""
    command = 'echo "in $(pwd) as $HOOKSPAWN_SESSION_ID" | tr a-z A-Z > "$HOME/said"'
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=command)
    write_agent(settings.agents_dir, "shell")
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("shell")
        done = hs.wait_status(session_id, "succeeded", "failed")
    assert done["status"] == "succeeded", done
    said = (Path(done["workspace"]) / "home" / "user" / "said").read_text()
    assert said.startswith("IN /") and said.endswith(f" AS {session_id.upper()}\n"), said
    assert f"harness: {command}" in done["logTail"]
