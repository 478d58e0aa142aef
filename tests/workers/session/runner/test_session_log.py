"""A log hookspawn owns: command output through a pipe, every line of it prefixed, the log
bounded by HOOKSPAWN_SESSION_LOG_LIMIT; and the harness bounded by HOOKSPAWN_HARNESS_TIMEOUT."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.conftest import make_settings, wait_for
from tests.workers.session.runner.conftest import (
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from tests.workers.session.runner.test_harness import _running, _waiting_harness
from workers.session.runner.command import run_command
from workers.session.runner.log_writer import OUTPUT_PREFIX, SessionLog

MB = 1024 * 1024
#: a line of hookspawn's own, as the runner writes them
OWN_LINE = re.compile(rb"^\[hookspawn \d\d:\d\d:\d\d\] ")
#: a setup that truncates its standard output (the log file, were it handed the file) and
#: prints a line made to look like one of hookspawn's
FORGING_SETUP = [
    "python3 -c 'import os, sys; os.ftruncate(1, 0)' 2>/dev/null || echo truncate-refused",
    "echo '[hookspawn 00:00:00] setup tools (forged)'",
    "printf 'no newline at the end'",
]


def _log(settings_data_dir: Path, session_id: str) -> bytes:
    return (settings_data_dir / "sessions" / session_id / "log").read_bytes()


def test_a_command_cannot_truncate_the_log_or_print_a_line_of_hookspawn(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "forger", setup=[{"name": "tools", "commands": FORGING_SETUP}])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("forger")
        ended = hs.wait_status(session_id, "succeeded", "failed")
    assert ended["status"] == "succeeded", ended
    lines = _log(settings.data_dir, session_id).splitlines()
    # the real staging lines are still there, in front of the setup's output
    assert lines[0].startswith(b"[hookspawn ") and b"staging 1 mount(s)" in lines[0]
    forged = lines.index(OUTPUT_PREFIX + b"[hookspawn 00:00:00] setup tools (forged)")
    assert any(b"git fetch" in line for line in lines[:forged])
    assert OUTPUT_PREFIX + b"truncate-refused" in lines
    # the forged line appears prefixed, and every line is hookspawn's own or prefixed output
    assert not any(line.startswith(b"[hookspawn 00:00:00]") for line in lines)
    assert all(OWN_LINE.match(line) or line.startswith(OUTPUT_PREFIX) for line in lines), lines
    # output without a last newline still ends its line before hookspawn writes again
    assert OUTPUT_PREFIX + b"no newline at the end" in lines
    assert lines[-1].endswith(b"] succeeded")
    assert "  | [hookspawn 00:00:00] setup tools (forged)" in ended["logTail"]


def test_a_setup_printing_50_mb_leaves_the_log_cut_at_the_default_limit(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    assert settings.session_log_limit == 10 * MB  # the default
    loud = ["yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 52428800", "echo after-the-flood"]
    write_agent(settings.agents_dir, "loud", setup=[{"name": "flood", "commands": loud}])
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("loud")
        ended = hs.wait_status(session_id, "succeeded", "failed", timeout=120)
    assert ended["status"] == "succeeded", ended
    log = _log(settings.data_dir, session_id)
    assert 10 * MB - 64 * 1024 < len(log) <= 10 * MB
    lines = log.splitlines()
    assert lines[0].startswith(b"[hookspawn ")  # kept: the log's beginning
    (said,) = [line for line in lines if b"log limit reached" in line]
    assert OWN_LINE.match(said)
    dropped = int(re.search(rb"(\d+) bytes of output dropped", said).group(1))  # type: ignore[union-attr]
    setup = next(n for n, line in enumerate(lines) if line.endswith(b"] setup flood"))
    flood = [line for line in lines[setup:] if line.startswith(OUTPUT_PREFIX)]
    kept = sum(len(line) - len(OUTPUT_PREFIX) + 1 for line in flood)
    # every byte of output is either in the log or counted as dropped
    assert kept + dropped == 52428800 + len("after-the-flood\n")
    assert b"after-the-flood" not in log
    assert lines[-1].endswith(b"] succeeded")


def test_the_limit_counts_every_byte_and_the_log_keeps_its_beginning(tmp_path: Path) -> None:
    path = tmp_path / "log"
    limit = 16 * 1024
    with SessionLog(path, limit) as log:
        log.note("staging")
        code = run_command(
            ["/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            timeout=30,
            log=log,
            cancel=lambda: False,
        )
        assert code == 0
        run_command(
            ["/bin/sh", "-c", "echo more"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            timeout=30,
            log=log,
            cancel=lambda: False,
        )
        for n in range(1000):  # hookspawn's own lines past the limit are dropped too
            log.note(f"note {n}")
    data = path.read_bytes()
    assert len(data) <= limit
    lines = data.splitlines()
    assert lines[1] == OUTPUT_PREFIX + b"line-0"
    output = [line for line in lines if line.startswith(OUTPUT_PREFIX)]
    assert output == [OUTPUT_PREFIX + f"line-{n}".encode() for n in range(len(output))]
    said = [line for line in lines if b"log limit reached" in line]
    first = sum(len(f"line-{n}\n") for n in range(len(output), 2000))
    assert [re.search(rb"(\d+) bytes of output", s).group(1) for s in said] == [  # type: ignore[union-attr]
        str(first).encode(),
        b"5",  # the next command's output: dropped too, so the log has no hole
    ]
    assert all(OWN_LINE.match(line) or line.startswith(OUTPUT_PREFIX) for line in lines)


@pytest.mark.parametrize(
    ("value", "size"), [("512K", 512 * 1024), ("10M", 10 * MB), ("1G", 1024 * MB)]
)
def test_the_log_limit_takes_sizes(value: str, size: int) -> None:
    os.environ["HOOKSPAWN_SESSION_LOG_LIMIT"] = value
    try:
        assert make_settings().session_log_limit == size
    finally:
        del os.environ["HOOKSPAWN_SESSION_LOG_LIMIT"]


def test_a_bad_log_limit_or_harness_timeout_is_refused() -> None:
    with pytest.raises(ValidationError, match="session_log_limit"):
        make_settings(session_log_limit="10 lines")
    with pytest.raises(ValidationError, match="harness_timeout"):
        make_settings(harness_timeout="soon")
    assert make_settings(harness_timeout="15m").harness_timeout == timedelta(minutes=15)
    assert make_settings().harness_timeout == timedelta(hours=2)


def test_a_harness_past_its_timeout_is_stopped_and_fails_harness_timeout(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    harness, cmdline = _waiting_harness()
    settings = runner_settings(
        redis_url, shared_dir, origin, harness_command=harness, harness_timeout="2s"
    )
    write_agent(settings.agents_dir, "endless")
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("endless")
        ended = hs.wait_status(session_id, "failed", "succeeded", "cancelled", timeout=60)
    assert (ended["status"], ended["failure"]["code"]) == ("failed", "harness_timeout"), ended
    assert "HOOKSPAWN_HARNESS_TIMEOUT (2s)" in ended["failure"]["message"]
    wait_for(lambda: not _running(cmdline), what=lambda: f"still running: {_running(cmdline)}")


#: what a command may have printed: a carriage return painting a line of hookspawn's over its
#: own, a colour, a title change, a bell, DEL and a C1 control; and text that is not ASCII
PAINTED = (
    "[hookspawn 10:00:00] staging 1 mount(s)\n"
    "  | x\r[hookspawn 19:99:99] succeeded\n"
    "  | \x1b[31mred\x1b[0m \x1b]0;title\x07 \x7f \u0085 caf\u00e9\ttab\n"
)


def test_the_log_endpoint_serves_control_characters_escaped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "plain")
    written = PAINTED.encode()
    with hookspawn_web(settings) as hs:
        session_id = hs.start("plain")
        log = settings.data_dir / "sessions" / session_id / "log"
        log.parent.mkdir(parents=True)
        log.write_bytes(written)
        served = hs.http.get(f"/sessions/{session_id}/log")
        raw = hs.http.get(f"/sessions/{session_id}/log", params={"raw": "true"})
        # a read starting inside the log, past the é's first byte: the offsets stay bytes
        cut = written.index("é".encode()) + 1
        tail = hs.http.get(f"/sessions/{session_id}/log", params={"offset": cut})
    assert served.status_code == 200, served.text
    text = served.text
    assert "  | x\\r[hookspawn 19:99:99] succeeded\n" in text
    assert "\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 \\x7f \\x85 café\ttab\n" in text
    controls = [c for c in text if c not in "\n\t" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]
    assert controls == [], text
    assert "\r" not in text and text.count("\n") == PAINTED.count("\n")
    assert served.headers["x-log-offset"] == str(len(written))
    assert raw.content == written and raw.headers["x-log-offset"] == str(len(written))
    assert tail.headers["x-log-offset"] == str(len(written))
    assert tail.text == "\ufffd\ttab\n"


def test_a_read_cut_inside_a_character_ends_before_it(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "plain")
    with hookspawn_web(settings) as hs:
        session_id = hs.start("plain")
        log = settings.data_dir / "sessions" / session_id / "log"
        log.parent.mkdir(parents=True)
        log.write_bytes("ab€".encode()[:-1])  # the euro sign's last byte not written yet
        first = hs.http.get(f"/sessions/{session_id}/log")
        with log.open("ab") as more:
            more.write("€".encode()[-1:] + b"\n")
        second = hs.http.get(
            f"/sessions/{session_id}/log", params={"offset": first.headers["x-log-offset"]}
        )
    assert (first.text, first.headers["x-log-offset"]) == ("ab", "2")
    assert (second.text, second.headers["x-log-offset"]) == ("€\n", "6")
