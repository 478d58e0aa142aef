"""`hookspawn sessions logs ID [--follow]` and the fields GET /sessions/{id} gains."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.workers.session.runner.conftest import (
    HOOKSPAWN,
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    settings_env,
    write_agent,
)
from triggers.session.spec import SessionSpec

#: prints, then waits for the test to drop `$HOME/go`, then prints again
GATED_HARNESS = (
    "/bin/sh -c 'echo harness-begins; "
    'while [ ! -f "$HOME/go" ]; do sleep 0.05; done; echo harness-ends\''
)


def test_logs_prints_the_log_and_follow_waits_for_the_end(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=GATED_HARNESS)
    write_agent(settings.agents_dir, "gated")
    env = settings_env(settings)
    with hookspawn_web(settings) as hs, running_runner(settings):
        url = str(hs.http.base_url)
        session_id = hs.start("gated")
        running = hs.wait_status(session_id, "running")
        follow = subprocess.Popen(
            [str(HOOKSPAWN), "sessions", "logs", session_id, "--follow", "--url", url],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        (Path(running["workspace"]) / "home" / "user" / "go").write_text("")
        out, err = follow.communicate(timeout=60)
        ended = hs.session(session_id)
        once = subprocess.run(
            [str(HOOKSPAWN), "sessions", "logs", session_id, "--url", url],
            env=env,
            capture_output=True,
            check=False,
        )
        shown = subprocess.run(
            [str(HOOKSPAWN), "sessions", "show", session_id, "--url", url],
            env=env,
            capture_output=True,
            check=True,
            text=True,
        )
        missing = subprocess.run(
            [str(HOOKSPAWN), "sessions", "logs", "no-such-session", "--url", url],
            env=env,
            capture_output=True,
            check=False,
        )
    assert follow.returncode == 0, err
    text = out.decode()
    assert "harness-begins" in text and "harness-ends" in text
    assert text.rstrip().endswith("succeeded")
    assert ended["status"] == "succeeded"
    log_file = settings.data_dir / "sessions" / session_id / "log"
    assert once.returncode == 0
    assert once.stdout == log_file.read_bytes()
    assert "status: succeeded\n" in shown.stdout
    assert f"workspace: {ended['workspace']}\n" in shown.stdout
    assert missing.returncode == 1
    assert b"session_not_found" in missing.stderr


#: prints an OSC 8 link (shown text and target differ), CSI colours and a carriage return
#: (printf's octal escapes: \033 ESC, \134 backslash, \015 CR)
ESCAPING_HARNESS = (
    "/usr/bin/printf '\\033]8;;https://evil.example/x\\033\\134https://github.com/acme"
    "\\033]8;;\\033\\134 \\033[31mred\\033[0m\\015done\\n'"
)


def test_logs_prints_no_control_sequence_unless_raw(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=ESCAPING_HARNESS)
    write_agent(settings.agents_dir, "escaping")
    env = settings_env(settings)
    with hookspawn_web(settings) as hs, running_runner(settings):
        url = str(hs.http.base_url)
        session_id = hs.start("escaping")
        hs.wait_status(session_id, "succeeded", "failed", timeout=60)

        def logs(*flags: str) -> bytes:
            done = subprocess.run(
                [str(HOOKSPAWN), "sessions", "logs", session_id, *flags, "--url", url],
                env=env,
                capture_output=True,
                check=True,
            )
            return done.stdout

        shown, followed, raw = logs(), logs("--follow"), logs("--raw")
    log_file = settings.data_dir / "sessions" / session_id / "log"
    assert b"\x1b]8;;https://evil.example/x\x1b\\" in raw, raw
    assert raw == log_file.read_bytes()
    for out in (shown, followed):
        # the link's text stays, its target (and the carriage return) are gone
        assert b"\n  | https://github.com/acme reddone\n" in out, out
        controls = [
            c for c in out.decode() if c not in "\n\t" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)
        ]
        assert controls == [], out
    assert followed == shown
    assert shown.count(b"\n") == raw.count(b"\n")


def test_get_session_gains_exactly_the_runner_fields(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "plain")
    with hookspawn_web(settings) as hs:
        session_id = hs.start("plain")
        queued = hs.session(session_id)
        listed = hs.http.get("/sessions").json()["items"]
    spec_fields = set(SessionSpec.model_json_schema(by_alias=True)["properties"])
    # beside the spec: the run's fields, and the broker's audit (issue 18)
    assert set(queued) - spec_fields == {
        "audit",
        "failedAuthentications",
        "status",
        "failure",
        "workspace",
        "snapshotKey",
        "snapshotScope",
        "snapshot",
        "harnessRun",
        "result",
        "usage",
        "logTail",
        "times",
    }
    assert queued["status"] == "queued"
    assert (queued["harnessRun"], queued["result"], queued["usage"]) == (None,) * 3
    assert queued["harness"] == "claude-code"  # the agent's, until a runner runs it
    assert queued["failure"] is None
    assert queued["logTail"] == ""
    assert queued["workspace"] == str((settings.data_dir / "workspaces" / session_id).absolute())
    # the key covers the cache.files in the checkout: known once setup computes it
    assert (queued["snapshotKey"], queued["snapshotScope"], queued["snapshot"]) == (None,) * 3
    (item,) = listed
    assert item["status"] == "queued"
    assert item["snapshotKey"] is None
    assert "logTail" not in item


def test_without_the_runner_sessions_have_no_run(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, runner=None)
    write_agent(settings.agents_dir, "recorded")
    with hookspawn_web(settings) as hs:
        session_id = hs.start("recorded")
        session = hs.session(session_id)
        cancel = hs.http.post(f"/sessions/{session_id}/cancel")
    assert "status" not in session
    assert cancel.status_code == 409
    assert cancel.json()["error"]["code"] == "not_cancellable"
