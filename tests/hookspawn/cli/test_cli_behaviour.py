"""The CLI as a user meets it: where client commands look for the server, and what goes wrong
(no server, no file, a bad argument, a closed pipe) is one line and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookspawn import cli
from hookspawn.cli.client import DEFAULT_URL
from hookspawn.cli.parser import build_parser
from hookspawn.serve.redis_server import free_port

CLI = Path(sys.executable).parent / "hookspawn"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / ".auto"


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdout: int | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    base["HOOKSPAWN_WEBHOOK_SECRET"] = "s3cret"
    return subprocess.run(
        [str(CLI), *args],
        cwd=cwd,
        env={**base, **(env or {})},
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )


def in_process(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> subprocess.CompletedProcess[str]:
    """`hookspawn ARGS` in this process (a new interpreter per case would make this slow)."""
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOOKSPAWN_WEBHOOK_SECRET", "s3cret")
    try:
        code = cli.main(list(args))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def client_commands(payload: Path) -> list[list[str]]:
    """Every client command, each needing a server."""
    return [
        ["send", str(payload), "--event", "push"],
        ["send", "--example", "pull_request.opened"],
        ["explain", str(payload), "--event", "push"],
        ["deliveries", "list"],
        ["deliveries", "show", "d1"],
        ["deliveries", "replay", "d1"],
        ["sessions", "list"],
        ["sessions", "show", "s1"],
        ["connections", "list"],
        ["connections", "sync"],
        ["start", "pr-review"],
    ]


def test_every_client_command_takes_url_and_says_when_the_server_is_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = tmp_path / "push.json"
    payload.write_text("{}")
    port = free_port()  # nothing listens there
    for command in client_commands(payload):
        url = f"http://127.0.0.1:{port}"
        line = one_line(in_process(capsys, monkeypatch, *command, "--url", url))
        assert line.startswith(f"hookspawn {command[0]}: cannot reach the server at "), line
        assert f"http://127.0.0.1:{port}" in line


def test_the_server_comes_from_hookspawn_url_then_the_default(tmp_path: Path) -> None:
    port = free_port()
    done = run(
        "deliveries", "list", cwd=tmp_path, env={"HOOKSPAWN_URL": f"http://127.0.0.1:{port}/"}
    )
    assert f"cannot reach the server at http://127.0.0.1:{port}: " in one_line(done)
    other = free_port()
    done = run(
        "sessions",
        "list",
        "--url",
        f"http://127.0.0.1:{other}",
        cwd=tmp_path,
        env={"HOOKSPAWN_URL": f"http://127.0.0.1:{port}"},
    )
    assert f"http://127.0.0.1:{other}" in one_line(done)
    parser = build_parser()
    for command in client_commands(tmp_path / "x.json"):
        assert parser.parse_args(command).url is None  # resolved at run time: env, then default
    assert DEFAULT_URL == "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["send", "missing.json", "--event", "push"], "hookspawn send: cannot read missing.json: "),
        (
            ["explain", "missing.json", "--event", "push"],
            "hookspawn explain: cannot read missing.json",
        ),
        (["send", "--example", "nope"], "hookspawn send: no example 'nope'; the examples are: "),
        (["send"], "hookspawn send: give a payload FILE (with --event) or --example NAME"),
        (["send", "x.json"], "hookspawn send: x.json: --event NAME is required with a FILE"),
        (["deliveries", "list", "--limit", "many"], "hookspawn deliveries: argument --limit: "),
        (["sessions", "lost"], "hookspawn sessions: argument action: invalid choice: 'lost'"),
        (["deliveries", "show"], "hookspawn deliveries: show: a delivery ID is required"),
        (["frobnicate"], "hookspawn: argument COMMAND: invalid choice: 'frobnicate'"),
        (
            ["sessions", "list", "--url", "ftp://x"],
            "hookspawn sessions: --url 'ftp://x': not an http",
        ),
    ],
)
def test_a_bad_argument_or_a_missing_file_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    line = one_line(in_process(capsys, monkeypatch, *args))
    assert line.startswith(expected), line


def test_a_bad_setting_is_one_line(tmp_path: Path) -> None:
    # as a subprocess: the one-line rule holds for the installed command, not just for main()
    done = run("deliveries", "list", cwd=tmp_path, env={"HOOKSPAWN_LEASE_SECONDS": "soon"})
    assert one_line(done).startswith("hookspawn deliveries: HOOKSPAWN_LEASE_SECONDS: ")


def test_a_bad_log_level_is_a_settings_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOOKSPAWN_LOG_LEVEL", "LOUD")
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_") and name != "HOOKSPAWN_LOG_LEVEL":
            monkeypatch.delenv(name)
    try:
        code = cli.main(["worker"])
    finally:
        out, err = capsys.readouterr()
    done = subprocess.CompletedProcess(["worker"], code, out, err)
    line = one_line(done)
    assert line.startswith("hookspawn worker: HOOKSPAWN_LOG_LEVEL: "), line
    assert "'LOUD'" in line and "DEBUG, INFO, WARNING, ERROR or CRITICAL" in line


def test_the_log_level_is_read_in_any_case() -> None:
    from workers.settings import Settings

    assert Settings(log_level="debug").log_level == "DEBUG"
    assert Settings().log_level == "INFO"


@pytest.mark.parametrize(
    "args", [["send", "--example"], ["check", str(EXAMPLES), "--no-event-schemas"]]
)
def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader (`head`) has gone: every write fails with EPIPE
    try:
        done = run(*args, cwd=tmp_path, stdout=write)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode != 0


@pytest.mark.slow
def test_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    # a long listing into `head -n 1`, as a user types it
    done = subprocess.run(
        f"{CLI} check {EXAMPLES} --json | head -n 1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout == "{\n"
    assert done.stderr == ""


def test_send_example_alone_lists_the_samples(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = in_process(capsys, monkeypatch, "send", "--example")
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        "issue_comment.created",
        "pull_request.opened",
        "push.main",
    ]
