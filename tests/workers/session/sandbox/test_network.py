"""The network of confined commands (HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS): none by default, and
only the listed domains, through srt's proxy, when allowed. Every server here listens on
127.0.0.1 and nothing leaves this machine."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.sandbox.config import SandboxConfig
from hookspawn.cli import main
from workers.session.runner.sandbox import confine, srt_scratch, srt_settings
from workers.settings import Settings

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


def fetch(
    workspace: Path, scratch: Path, allowed: Sequence[str], *requests: tuple[str, str]
) -> list[str]:
    """What each (mode, url) of CLIENT gave, run confined with `allowed` domains."""
    assert PYTHON is not None, "no python3 in /usr/local/bin, /usr/bin or /bin"
    argv, env = confine(
        [PYTHON, "-c", CLIENT, *(part for request in requests for part in request)],
        workspace=workspace,
        config=SRT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workspace / "home" / "user")},
        scratch=scratch,
        allowed_domains=allowed,
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
        [],
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


@pytest.mark.parametrize("entry", ["127.0.0.1", "127.0.0.1:{port}"])
def test_an_allowed_address_is_reached_through_srts_proxy_and_no_other_name(
    workspace: Path, scratch: Path, server: Server, entry: str
) -> None:
    got = fetch(
        workspace,
        scratch,
        [entry.format(port=server.port)],
        ("proxy", f"http://127.0.0.1:{server.port}/allowed"),
        # the same server under a name that is not listed: srt's proxy decides by the name
        ("proxy", f"http://localhost:{server.port}/not-listed"),
    )
    assert got == [ANSWERED, BLOCKED]
    assert server.seen == ["/allowed"]


def test_localhost_is_its_own_entry(workspace: Path, scratch: Path, server: Server) -> None:
    got = fetch(
        workspace,
        scratch,
        ["localhost"],
        ("proxy", f"http://localhost:{server.port}/allowed"),
        ("proxy", f"http://127.0.0.1:{server.port}/not-listed"),
    )
    assert got == [ANSWERED, BLOCKED]
    assert server.seen == ["/allowed"]


def test_an_entry_with_another_port_does_not_reach_this_one(
    workspace: Path, scratch: Path, server: Server
) -> None:
    other = server.port + 1 if server.port < 65535 else server.port - 1
    got = fetch(
        workspace, scratch, [f"127.0.0.1:{other}"], ("proxy", f"http://127.0.0.1:{server.port}/")
    )
    assert got == [BLOCKED]
    assert server.seen == []


def test_a_client_following_srts_no_proxy_goes_direct_and_finds_nothing(
    workspace: Path, scratch: Path, server: Server
) -> None:
    # srt sets NO_PROXY=localhost,127.0.0.1,::1,… in the sandbox: a client that honours it
    # connects to the sandbox's own loopback, even when the host's server is allowed
    url = f"http://127.0.0.1:{server.port}/"
    got = fetch(workspace, scratch, ["127.0.0.1", "localhost"], ("env", url), ("direct", url))
    assert got == [NOT_THERE, NOT_THERE]
    assert server.seen == []


ACCEPTED = [
    "example.com",
    "api.example.com:443",
    "*.example.com",
    "*.example.com:8443",
    "localhost",
    "localhost:3000",
    "127.0.0.1",
    "127.0.0.1:8000",
    "[::1]",
    "[2001:db8::1]:443",
    "_git.example.com",
]

REFUSED = {
    "https://api.example.com": "no scheme: a domain, not a URL",
    "example.com/v1": "no path: a domain, not a URL",
    "*": "too broad",
    "*.com": "too broad",
    "*:22": "too broad",
    "api.*.example.com": "a wildcard is only *. at the start",
    "example.com:0": "a port is a number from 1 to 65535",
    "example.com:65536": "a port is a number from 1 to 65535",
    "example.com:https": "a port is a number from 1 to 65535",
    "::1": "an IPv6 address goes in brackets",
    "[::1]x": "an IPv6 address in brackets, then nothing or :port",
    "[127.0.0.1]": "only an IPv6 address goes in brackets",
    "intranet": "a host name has a dot (example.com), or is localhost",
    "exa mple.com": "a host name is letters, digits, - and _ between single dots",
    "example..com": "a host name is letters, digits, - and _ between single dots",
    "example.com.": "a host name is letters, digits, - and _ between single dots",
}


def test_the_setting_is_comma_separated_and_empty_by_default() -> None:
    assert Settings.model_validate({}).sandbox_allowed_domains == []
    read = Settings.model_validate({"sandbox_allowed_domains": " example.com, *.npmjs.org ,"})
    assert read.sandbox_allowed_domains == ["example.com", "*.npmjs.org"]
    read = Settings.model_validate({"sandbox_allowed_domains": ",".join(ACCEPTED)})
    assert read.sandbox_allowed_domains == ACCEPTED


@pytest.mark.parametrize(("entry", "why"), REFUSED.items())
def test_a_malformed_entry_is_refused_naming_it(entry: str, why: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings.model_validate({"sandbox_allowed_domains": f"example.com,{entry}"})
    (error,) = raised.value.errors()
    assert error["loc"] == ("sandbox_allowed_domains",)
    assert error["msg"].startswith(
        f"Value error, {entry!r} is not a domain srt's proxy can allow: "
    )
    assert why in error["msg"]


def test_a_refused_entry_stops_the_runner_at_start_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOOKSPAWN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS", "pypi.org,https://files.example.com")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["runner"])
    assert (code, out.getvalue()) == (2, "")
    assert err.getvalue() == (
        "hookspawn runner: HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS: "
        "'https://files.example.com' is not a domain srt's proxy can allow: "
        "no scheme: a domain, not a URL\n"
    )


def test_srt_takes_every_entry_the_setting_accepts(workspace: Path, scratch: Path) -> None:
    # srt refuses to start with a settings file whose allowedDomains it does not accept
    argv, env = confine(
        ["/bin/true"],
        workspace=workspace,
        config=SRT,
        env={},
        scratch=scratch,
        allowed_domains=ACCEPTED,
    )
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_srts_settings_list_the_allowed_domains_and_deny_none(
    workspace: Path, scratch: Path
) -> None:
    assert srt_settings(SRT, workspace)["network"] == {"allowedDomains": [], "deniedDomains": []}
    network = srt_settings(SRT, workspace, allowed_domains=("pypi.org", "*.pythonhosted.org"))
    assert network["network"] == {
        "allowedDomains": ["pypi.org", "*.pythonhosted.org"],
        "deniedDomains": [],
    }
    confine(
        ["true"],
        workspace=workspace,
        config=SRT,
        env={},
        scratch=scratch,
        allowed_domains=["pypi.org"],
    )
    written = json.loads(workspace.with_name("s1.srt.json").read_text())
    assert written["network"]["allowedDomains"] == ["pypi.org"]


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
