"""A session's status where people look: deliveries (API, CLI, /ui), `sessions list`, replay,
cancel (CLI and /ui) and `sessions logs`, with a real runner, real HTTP and the CLI in process."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from hookspawn import cli
from tests.conftest import wait_for
from tests.workers.session.runner.conftest import (
    Hookspawn,
    Origin,
    dispatched_session,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from tests.workers.session.runner.test_lifecycle import PR_REVIEW_TRIGGER, widgets_payload

#: waits for the test to drop `$HOME/go`
GATED_HARNESS = "/bin/sh -c 'while [ ! -f \"$HOME/go\" ]; do sleep 0.05; done'"


def hookspawn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, hs: Hookspawn, *args: str
) -> subprocess.CompletedProcess[str]:
    """`hookspawn ARGS --url <the server>` in this process."""
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)
    try:
        code = cli.main([*args, "--url", str(hs.http.base_url)])
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def test_a_failed_session_shows_as_failed_wherever_its_delivery_is_read(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    webhooks_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "pr-review",
        setup=[{"name": "deps", "commands": ["true", "exit 3", "echo never"]}],
        triggers=PR_REVIEW_TRIGGER,
    )
    raw = json.dumps(widgets_payload(webhooks_dir)).encode()
    with hookspawn_web(settings, worker=True) as hs, running_runner(settings):
        session_id = dispatched_session(hs.http, raw, "status-1")
        session = hs.wait_status(session_id, "succeeded", "failed", "cancelled")
        shown = hs.http.get("/deliveries/status-1").json()
        listed = hs.http.get("/deliveries").json()["items"]
        show = hookspawn(capsys, monkeypatch, hs, "deliveries", "show", "status-1")
        table = hookspawn(capsys, monkeypatch, hs, "deliveries", "list")
        ui_list = hs.http.get("/ui/deliveries").text
        ui_page = hs.http.get("/ui/deliveries/status-1").text
        failed = hookspawn(capsys, monkeypatch, hs, "sessions", "list", "--status", "failed")
        as_json = hookspawn(capsys, monkeypatch, hs, "sessions", "list", "--json")
        succeeded = hookspawn(capsys, monkeypatch, hs, "sessions", "list", "--status", "succeeded")
        replay = hookspawn(capsys, monkeypatch, hs, "deliveries", "replay", "status-1")
        wait_for(lambda: len(hs.http.get("/deliveries/status-1").json()["runs"]) == 2)
        again = hs.session(session_id)
    assert session["status"] == "failed", session
    # the failing setup entry and its failing command are named
    assert session["failure"]["code"] == "setup_failed"
    assert "'deps'" in session["failure"]["message"]
    assert "`exit 3`" in session["failure"]["message"], session["failure"]
    outcome = shown["outcomes"][0]
    assert (outcome["outcome"], outcome["sessionStatus"]) == ("dispatched", "failed")
    assert outcome["sessionFailure"] == "setup_failed"
    [item] = [d for d in listed if d["deliveryId"] == "status-1"]
    assert item["outcomes"][0]["sessionStatus"] == "failed"
    assert show.returncode == 0
    assert f"session {session_id} (failed)" in show.stdout
    assert "SESSIONS" in table.stdout and "1 failed" in table.stdout
    # the delivery's word (dispatched, handed on: blue, never the green of success) and the
    # session's own badge, red
    assert 'class="badge dispatched">dispatched 1<' in ui_list
    assert 'class="badge session-failed">failed: setup_failed<' in ui_list
    assert 'class="badge session-failed">failed: setup_failed<' in ui_page
    assert session_id in failed.stdout and "STATUS" in failed.stdout
    assert "failed setup_failed" in failed.stdout
    assert session_id not in succeeded.stdout
    assert json.loads(as_json.stdout)["items"][0]["status"] == "failed"
    assert replay.returncode == 0, replay.stderr
    assert f"session {session_id} (failed) of pr-review already exists: it is not run again" in (
        replay.stdout
    )
    assert again["status"] == "failed"


def test_sessions_cancel_and_the_ui_button_cancel_queued_and_running_sessions(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=GATED_HARNESS)
    write_agent(settings.agents_dir, "gated")
    with hookspawn_web(settings) as hs:
        queued = hs.start("gated")
        page = hs.http.get(f"/ui/sessions/{queued}").text
        elsewhere = hs.http.post(
            f"/ui/sessions/{queued}/cancel", headers={"Sec-Fetch-Site": "cross-site"}
        )
        still = hs.session(queued)["status"]
        button = hs.http.post(
            f"/ui/sessions/{queued}/cancel", headers={"Sec-Fetch-Site": "same-origin"}
        )
        after = hs.http.get(f"/ui/sessions/{queued}").text
        with running_runner(settings):
            running = hs.start("gated")
            hs.wait_status(running, "running")
            by_cli = hookspawn(capsys, monkeypatch, hs, "sessions", "cancel", running)
            ended = hs.wait_status(running, "cancelled", "failed", "succeeded")
            again = hookspawn(capsys, monkeypatch, hs, "sessions", "cancel", running)
    assert 'class="badge session-queued">queued<' in page
    assert f'action="/ui/sessions/{queued}/cancel"' in page
    assert elsewhere.status_code == 403
    assert still == "queued"
    assert button.status_code == 303
    assert button.headers["location"] == f"/ui/sessions/{queued}"
    assert 'class="badge session-cancelled">cancelled<' in after
    assert f'action="/ui/sessions/{queued}/cancel"' not in after
    assert by_cli.returncode == 0, by_cli.stderr
    assert by_cli.stdout == f"session {running} (running): its runner stops it now\n"
    assert ended["status"] == "cancelled"
    assert again.returncode == 0
    assert again.stdout == f"session {running} cancelled\n"


def test_the_session_page_lists_the_run_times_in_order_in_one_format(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "fails", setup=[{"name": "boom", "commands": ["false"]}])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("fails")
        hs.wait_status(session_id, "failed", "succeeded")
        page = hs.http.get(f"/ui/sessions/{session_id}").text
    times = re.findall(r"<dt>(\w+)</dt><dd>([^<]*)</dd>", page)
    run_times = [(name, at) for name, at in times if re.fullmatch(r"[\d-]+ [\d:]+ UTC", at)]
    names = [name for name, _ in run_times]
    assert names[:2] == ["Created", "Queued"], names
    assert names[2:] == ["Staging", "Setup", "Failed", "Ended"], names
    assert [at for _, at in run_times[1:]] == sorted(at for _, at in run_times[1:])
    assert 'class="badge session-failed">failed: setup_failed<' in page


def test_sessions_logs_of_a_session_with_no_run_says_so(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, runner=None)
    write_agent(settings.agents_dir, "recorded")
    with hookspawn_web(settings) as hs:
        session_id = hs.start("recorded")
        logs = hookspawn(capsys, monkeypatch, hs, "sessions", "logs", session_id)
        listed = hookspawn(capsys, monkeypatch, hs, "sessions", "list")
    assert logs.returncode == 1
    assert logs.stdout == ""
    assert logs.stderr == (
        f"hookspawn sessions: logs: session {session_id} has no run here, so no log: no local "
        "runner runs it (HOOKSPAWN_RUNNER=local runs sessions on this machine)\n"
    )
    assert re.search(rf"{session_id}\s+recorded\s+-\s", listed.stdout), listed.stdout
