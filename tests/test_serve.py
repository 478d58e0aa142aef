"""`hookspawn serve`: the one-command local run, from the README, as a user runs it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import wait_for
from workers.redis_server import free_port

pytestmark = pytest.mark.slow


def processes_mentioning(text: str) -> list[int]:
    """Pids whose command line mentions `text` (the data dir or the port)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    return {p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)}


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def redis_processes(address: str) -> list[int]:
    return [p for p in processes_mentioning(address) if "redis-server" in _cmdline(p)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, str, str]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_LOG_LEVEL"] = "WARNING"
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=60)
        text = log.read_text()
        secret = re.search(r"webhook secret (\S+)", text)
        redis_at = re.search(r"embedded Redis redis://(127\.0\.0\.1:\d+)/", text)
        assert secret, text
        assert redis_at, text
        yield proc, url, secret.group(1), redis_at.group(1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


def test_serve_accepts_a_sent_payload_and_stops_everything(
    served: tuple[subprocess.Popen[str], str, str, str], webhooks_dir: Path
) -> None:
    proc, url, secret, redis_at = served
    cwd = Path(f"/proc/{proc.pid}/cwd").resolve()
    assert (cwd / ".hookspawn" / "webhook-secret").read_text().strip() == secret
    assert (cwd / ".hookspawn" / "redis" / "appendonlydir").exists() or list(
        (cwd / ".hookspawn" / "redis").glob("*.aof")
    )
    assert redis_processes(redis_at), "embedded redis-server not running"

    sent = subprocess.run(
        [
            sys.executable, "-m", "workers.cli", "send",
            str(webhooks_dir / "pull_request/opened.payload.json"),
            "--event", "pull_request", "--delivery", "serve-1", "--url", f"{url}/webhooks/github",
        ],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert sent.stdout.startswith("202 ")

    def processed() -> bool:
        shown = subprocess.run(
            [sys.executable, "-m", "workers.cli", "deliveries", "show", "serve-1", "--json",
             "--url", url],
            cwd=cwd, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return shown.returncode == 0 and '"status": "processed"' in shown.stdout

    wait_for(processed, timeout=60)

    tree = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    wait_for(lambda: not alive(tree), timeout=30)
    time.sleep(0.5)
    assert redis_processes(redis_at) == [], "redis-server outlived serve"
    assert processes_mentioning(f"--port {url.rsplit(':', 1)[1]}") == []


def test_a_crashed_part_stops_everything(
    served: tuple[subprocess.Popen[str], str, str, str],
) -> None:
    proc, url, _, redis_at = served
    port = url.rsplit(":", 1)[1]
    web = [p for p in processes_mentioning(f"web --host 127.0.0.1 --port {port}") if p != proc.pid]
    assert web, "web child not found"
    tree = descendants(proc.pid)
    assert len(tree) >= 3  # redis-server, web, worker (and its pool once started)
    os.kill(web[0], signal.SIGKILL)
    assert proc.wait(60) != 0
    time.sleep(0.5)
    assert redis_processes(redis_at) == [], "redis-server outlived serve"
    assert processes_mentioning(f"--port {port}") == [], "a part outlived serve"
    wait_for(lambda: not alive(tree), timeout=30)
