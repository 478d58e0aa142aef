"""Start-up and CLI manners: a port in use, a missing Redis URL or a bad setting is one line
before any banner; `web` without a webhook secret warns; every verb (and action) has its own
help with defaults; an option of another action is an error."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hookspawn import cli
from hookspawn.cli.help import Formatter
from hookspawn.cli.parser import build_parser
from hookspawn.serve.redis_server import free_port
from tests.hookspawn.cli.test_cli_behaviour import in_process, one_line

CLI = Path(sys.executable).parent / "hookspawn"


def _env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    return env | values


@pytest.mark.parametrize(
    ("verb", "extra"),
    [("serve", []), ("web", []), ("web", ["--workers", "2"])],
    ids=["serve", "web", "web-with-2-processes"],
)
def test_a_port_in_use_is_one_line_before_any_banner(
    verb: str, extra: list[str], tmp_path: Path, redis_url: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(CLI), verb, "--port", str(port), "--broker-port", str(free_port()), *extra],
            cwd=tmp_path,
            env=_env(HOOKSPAWN_REDIS_URL=redis_url, HOOKSPAWN_DATA_DIR=str(tmp_path / "data")),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stdout == ""
    assert one_line(done) == (
        f"hookspawn {verb}: port {port} on 127.0.0.1 is in use (another hookspawn? choose one "
        "with --port)"
    )


@pytest.mark.parametrize("verb", ["web", "worker"])
def test_a_missing_redis_url_is_one_line(
    verb: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = one_line(in_process(capsys, monkeypatch, verb))
    assert line.startswith(f"hookspawn {verb}: set HOOKSPAWN_REDIS_URL to the Redis "), line


def test_a_bad_setting_carries_no_library_prefix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOOKSPAWN_RETENTION", "abc")
    try:
        code = cli.main(["check"])
    finally:
        monkeypatch.delenv("HOOKSPAWN_RETENTION")
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "hookspawn check: HOOKSPAWN_RETENTION: not a duration: 'abc' (use e.g. 90s, 15m, 2h, 3d)\n"
    )


def test_web_without_a_webhook_secret_warns_at_start(tmp_path: Path, redis_url: str) -> None:
    port = free_port()
    web = subprocess.Popen(
        [str(CLI), "web", "--port", str(port), "--broker-port", str(free_port())],
        cwd=tmp_path,
        env=_env(HOOKSPAWN_REDIS_URL=redis_url, HOOKSPAWN_DATA_DIR=str(tmp_path / "data")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    try:
        assert web.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = web.stderr.readline()
            if not line or "Uvicorn running" in line:
                break
            seen.append(line)
    finally:
        web.terminate()
        web.wait(timeout=30)
        if web.stderr is not None:
            web.stderr.close()
    warnings = [line for line in seen if "no HOOKSPAWN_WEBHOOK_SECRET" in line]
    assert len(warnings) == 1, seen
    assert "every delivery is refused (401)" in warnings[0]


def _verbs() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_verb_has_its_own_help_with_defaults(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, parser in _verbs().items():
        done = in_process(capsys, monkeypatch, name, "--help")
        assert done.returncode == 0, name
        assert done.stdout.startswith(f"usage: hookspawn {name} "), done.stdout
        formatter = Formatter(parser.prog)
        for action in parser._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                assert "default" in (formatter._get_help_string(action) or ""), (name, action)
    serve = in_process(capsys, monkeypatch, "serve", "--help").stdout
    assert "(default: 127.0.0.1)" in serve and "(default: 8000)" in serve


def test_an_action_has_its_own_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sync = in_process(capsys, monkeypatch, "connections", "sync", "--help")
    assert sync.returncode == 0
    assert sync.stdout.startswith("usage: hookspawn connections sync [-h] [--url URL] [--json]\n")
    assert "--installation" not in sync.stdout and "repository" not in sync.stdout
    add = in_process(capsys, monkeypatch, "connections", "add", "--help").stdout
    assert "--installation" in add and "OWNER/NAME" in add
    whole = in_process(capsys, monkeypatch, "connections", "--help").stdout
    assert "{list,sync,add,remove}" in whole


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["deliveries", "list", "--apply"], "--apply is not an option of `list` (recover only)"),
        (
            ["connections", "list", "--installation", "3"],
            "--installation is not an option of `list` (add only)",
        ),
        (["sessions", "list", "--follow"], "--follow is not an option of `list` (logs only)"),
        (["sessions", "logs", "s1", "--status", "failed"], "--status is not an option of `logs`"),
        (["sessions", "list", "--nope"], "unrecognized arguments: --nope"),
        (["serve", "--nope"], "unrecognized arguments: --nope"),
    ],
)
def test_an_option_the_action_does_not_take_is_an_error(
    args: list[str],
    expected: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    done = in_process(capsys, monkeypatch, *args)
    assert done.returncode == 2
    assert expected in one_line(done)


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "logs", "--follow", "s1"],
        ["sessions", "logs", "s1", "--follow"],
        ["deliveries", "show", "--json", "d1"],
        ["connections", "add", "--json", "you/app"],
        ["connections", "add", "--installation", "7", "you/app"],
    ],
)
def test_options_go_anywhere_among_a_verbs_arguments(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The id after an option is the verb's id (not an unrecognized argument): the command
    gets as far as the server, which is not there."""
    done = in_process(capsys, monkeypatch, *args, "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 1
    assert "cannot reach the server" in one_line(done)


def test_an_option_before_a_missing_id_still_says_the_id_is_required(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = in_process(capsys, monkeypatch, "sessions", "logs", "--follow")
    assert done.returncode == 2
    assert "logs: a session ID is required" in one_line(done)


def test_sandbox_check_takes_probe_before_or_after_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.json"
    for args in (["--probe", str(missing)], [str(missing), "--probe"]):
        done = in_process(capsys, monkeypatch, "sandbox", "check", *args)
        assert done.returncode == 1
        assert f"{missing}: (file): cannot read it" in done.stdout
