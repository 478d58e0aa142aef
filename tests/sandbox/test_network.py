"""The network of confined commands: srt's proxy alone, which allows no domain. Every server
here listens on 127.0.0.1 and nothing leaves this machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents.sandbox_config import SandboxConfig
from workers.sandbox_exec import confine, srt_scratch, srt_settings

SRT = SandboxConfig(backend="srt")
#: a Python of the system directories, which confined commands see (a virtualenv's may not be)
PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")

#: run in the sandbox: one line per `MODE URL` argument pair, what fetching URL gave.
#: `env`: as clients do, by srt's proxy variables (its NO_PROXY sends 127.0.0.1 and localhost
#: direct); `proxy`: through srt's proxy whatever NO_PROXY says; `direct`: no proxy at all
CLIENT = """
import os, sys, urllib.error, urllib.request as r
srt_no_proxy = {k: os.environ[k] for k in ("NO_PROXY", "no_proxy")}
for mode, url in zip(sys.argv[1::2], sys.argv[2::2]):
    handlers = {
        "env": [],
        "proxy": [r.ProxyHandler({"http": os.environ["http_proxy"]})],
        "direct": [r.ProxyHandler({})],
    }[mode]
    # urllib's proxy handler too skips the hosts NO_PROXY names
    os.environ.update(srt_no_proxy if mode == "env" else dict.fromkeys(srt_no_proxy, ""))
    try:
        with r.build_opener(*handlers).open(url, timeout=20) as answer:
            print(answer.status, answer.read().decode().strip())
    except urllib.error.HTTPError as exc:
        print(exc.code, exc.headers.get("X-Proxy-Error"))
    except urllib.error.URLError as exc:
        print("unreachable", type(exc.reason).__name__)
"""


@dataclass
class Server:
    """An HTTP server on 127.0.0.1 that answers every GET and records its path."""

    port: int
    seen: list[str] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[Server]:
    found = Server(0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found.seen.append(self.path)
            body = b"from the host\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "data" / "workspaces" / "s1"
    (root / "home" / "user").mkdir(parents=True)
    return root


@pytest.fixture
def scratch() -> Iterator[Path]:
    path = srt_scratch(None)
    yield path
    shutil.rmtree(path)


def fetch(workspace: Path, scratch: Path, *requests: tuple[str, str]) -> list[str]:
    """What each (mode, url) of CLIENT gave, run confined."""
    assert PYTHON is not None, "no python3 in /usr/local/bin, /usr/bin or /bin"
    argv, env = confine(
        [PYTHON, "-c", CLIENT, *(part for request in requests for part in request)],
        workspace=workspace,
        config=SRT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workspace / "home" / "user")},
        scratch=scratch,
    )
    done = subprocess.run(argv, env=env, cwd=workspace, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


BLOCKED = "403 blocked-by-allowlist"
ANSWERED = "200 from the host"
#: a direct connection inside the sandbox: its network namespace has a loopback of its own,
#: where nothing listens
NOT_THERE = "unreachable ConnectionRefusedError"


def test_without_an_allowance_no_local_server_is_reached(
    workspace: Path, scratch: Path, server: Server
) -> None:
    ip, name = f"http://127.0.0.1:{server.port}/ip", f"http://localhost:{server.port}/name"
    got = fetch(
        workspace,
        scratch,
        ("proxy", ip),
        ("proxy", name),
        ("env", ip),
        ("env", name),
        ("direct", ip),
    )
    # srt's proxy answers, and refuses: its sockets are in srt's scratch directory, which
    # the sandbox shows (in /tmp, srt would hide them with the rest of the host)
    assert got == [BLOCKED, BLOCKED, NOT_THERE, NOT_THERE, NOT_THERE]
    assert server.seen == []


def test_srts_scratch_directory_is_its_tmpdir_and_readable_inside(
    workspace: Path, scratch: Path
) -> None:
    _, env = confine(
        ["true"], workspace=workspace, config=SRT, env={"TMPDIR": "/var/tmp"}, scratch=scratch
    )
    written = json.loads(workspace.with_name("s1.srt.json").read_text())
    assert env["TMPDIR"] == str(scratch)
    assert written["filesystem"]["allowRead"][-1] == str(scratch)
    assert srt_settings(SRT, workspace)["network"] == {"allowedDomains": [], "deniedDomains": []}
