"""Local-runner sessions confined by the real sandbox (srt, bubblewrap): what setup may reach,
and a runner whose sandbox cannot start refusing every session."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.workers.session.runner.conftest import (
    Hookspawn,
    Origin,
    hand_over,
    hookspawn_web,
    runner_process,
    runner_settings,
    running_runner,
    sandbox_file,
    write_agent,
)


def _ended(hs: Hookspawn, session_id: str) -> dict[str, Any]:
    return hs.wait_status(session_id, "succeeded", "failed", "cancelled", timeout=60)


def _host_dir(shared_dir: Path, name: str, files: dict[str, str]) -> Path:
    """A host directory the runner user may write on the host itself: only the sandbox can
    keep a session from writing it."""
    path = shared_dir / name
    path.mkdir()
    for file, text in files.items():
        (path / file).write_text(text)
    hand_over(path)
    return path


def test_setup_cannot_write_a_host_path_outside_the_session_root_and_mounts(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    outside = _host_dir(shared_dir, "outside", {"file": "the host's\n"})
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "escaping",
        setup=[{"name": "escape", "commands": [f"echo escaped > {outside}/file"]}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("escaping"))
    assert (session["status"], session["failure"]["code"]) == ("failed", "setup_failed")
    assert session["failure"]["message"].startswith(
        "setup entry 'escape' exited with status 2 at `"
    )
    assert (outside / "file").read_text() == "the host's\n"


def test_the_harness_cannot_write_a_host_path_outside_the_session_root(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    outside = _host_dir(shared_dir, "outside", {"file": "the host's\n"})
    harness = f"/bin/sh -c 'echo escaped > {outside}/file'"
    settings = runner_settings(redis_url, shared_dir, origin, harness_command=harness)
    write_agent(settings.agents_dir, "escaping-harness")
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("escaping-harness"))
    assert (session["status"], session["failure"]["code"]) == ("failed", "harness_failed")
    assert (outside / "file").read_text() == "the host's\n"


def test_a_writable_mount_is_writable_and_a_readonly_one_only_readable(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    shared = _host_dir(shared_dir, "shared", {})
    reference = _host_dir(shared_dir, "reference", {"data": "reference data\n"})
    config = sandbox_file(
        shared_dir,
        mounts=[
            {"source": str(shared), "target": str(shared), "mode": "writable"},
            {"source": str(reference), "target": str(reference), "mode": "readonly"},
        ],
    )
    settings = runner_settings(redis_url, shared_dir, origin, sandbox_config=config)
    write_agent(
        settings.agents_dir,
        "mounted",
        setup=[
            {"name": "write-shared", "commands": [f"echo from-setup > {shared}/made"]},
            {"name": "read-reference", "commands": [f'cp {reference}/data "$HOME/seen"']},
            {"name": "write-reference", "commands": [f"echo changed > {reference}/data"]},
        ],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("mounted"))
    assert (session["status"], session["failure"]["code"]) == ("failed", "setup_failed")
    assert session["failure"]["message"].startswith(
        "setup entry 'write-reference' exited with status 2 at `"
    )
    assert (shared / "made").read_text() == "from-setup\n"
    home = Path(session["workspace"]) / "home" / "user"
    assert (home / "seen").read_text() == "reference data\n"
    assert (reference / "data").read_text() == "reference data\n"


def test_sandbox_env_reaches_setup_commands(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    config = sandbox_file(shared_dir, env={"SANDBOX_GREETING": "hello from sandbox.env"})
    settings = runner_settings(redis_url, shared_dir, origin, sandbox_config=config)
    write_agent(
        settings.agents_dir,
        "greeted",
        setup=[{"name": "greet", "commands": ['echo "$SANDBOX_GREETING" > "$HOME/greeting"']}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("greeted"))
    assert session["status"] == "succeeded", session
    greeting = Path(session["workspace"]) / "home" / "user" / "greeting"
    assert greeting.read_text() == "hello from sandbox.env\n"


#: a setup command: GET `url` through srt's proxy (srt's NO_PROXY would send a loopback
#: address direct, to the sandbox's own empty loopback) into $HOME/<name>, and note which
#: srt scratch directory /tmp shows inside
FETCH = (
    'ls -d /tmp/hookspawn-srt-* > "$HOME/scratch" && python3 -c "import os, urllib.request;'
    " os.environ['no_proxy'] = os.environ['NO_PROXY'] = '';"
    " print(urllib.request.urlopen('{url}', timeout=20).read().decode(), end='')\""
    ' > "$HOME/{name}"'
)


def test_setup_reaches_the_allowed_domains_and_no_other(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "14")
            self.end_headers()
            self.wfile.write(b"from the host\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = runner_settings(
        redis_url, shared_dir, origin, sandbox_allowed_domains=[f"127.0.0.1:{port}"]
    )
    write_agent(
        settings.agents_dir,
        "online",
        setup=[
            {
                "name": "allowed",
                "commands": [FETCH.format(url=f"http://127.0.0.1:{port}/a", name="allowed")],
            },
            {
                "name": "not-listed",
                "commands": [FETCH.format(url=f"http://localhost:{port}/b", name="not-listed")],
            },
        ],
    )
    try:
        with hookspawn_web(settings) as hs, running_runner(settings):
            session = _ended(hs, hs.start("online"))
    finally:
        server.shutdown()
        server.server_close()
    assert (session["status"], session["failure"]["code"]) == ("failed", "setup_failed")
    assert session["failure"]["message"].startswith(
        "setup entry 'not-listed' exited with status 1 at `"
    )
    assert seen == ["/a"]
    home = Path(session["workspace"]) / "home" / "user"
    assert (home / "allowed").read_text() == "from the host\n"
    assert (home / "not-listed").read_text() == ""
    # the session's srt scratch directory was the only one inside, and is gone with it
    (scratch,) = (home / "scratch").read_text().split()
    assert not Path(scratch).exists()


def test_a_runner_with_an_invalid_sandbox_config_refuses_sessions(
    redis_url: str, shared_dir: Path, origin: Origin, caplog: pytest.LogCaptureFixture
) -> None:
    missing = shared_dir / "no-such-dir"
    config = sandbox_file(
        shared_dir, mounts=[{"source": str(missing), "target": str(missing), "mode": "readonly"}]
    )
    settings = runner_settings(redis_url, shared_dir, origin, sandbox_config=config)
    write_agent(
        settings.agents_dir,
        "refused",
        setup=[{"name": "never", "commands": ['touch "$HOME/ran"']}],
    )
    with (
        caplog.at_level(logging.ERROR, logger="workers.session.runner.service"),
        hookspawn_web(settings) as hs,
        running_runner(settings),
    ):
        session = _ended(hs, hs.start("refused"))
    problem = f"{config}: sandbox.mounts[0].source: {missing} does not exist on this host"
    assert [
        r.getMessage() for r in caplog.records if r.name == "workers.session.runner.service"
    ] == [f"sandbox unavailable, sessions are refused (failed: sandbox_unavailable): {problem}"]
    assert (session["status"], session["failure"]["code"]) == ("failed", "sandbox_unavailable")
    assert session["failure"]["message"] == (
        f"the runner's sandbox cannot start, so no command was run: {problem}"
    )
    assert not (Path(session["workspace"]) / "home" / "user" / "ran").exists()


def test_a_runner_whose_sandbox_runtime_is_unavailable_refuses_sessions(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    config = shared_dir / "microsandbox.json"
    config.write_text(json.dumps({"sandbox": {"backend": "microsandbox", "mounts": []}}))
    settings = runner_settings(redis_url, shared_dir, origin, sandbox_config=config)
    write_agent(
        settings.agents_dir,
        "no-runtime",
        setup=[{"name": "never", "commands": ['touch "$HOME/ran"']}],
    )
    log = shared_dir / "runner.log"
    reason = "sandbox backend microsandbox needs a VM host, which this runner does not have"
    with hookspawn_web(settings) as hs, runner_process(settings, log):
        wait_for(lambda: "sandbox unavailable" in log.read_text())
        session = _ended(hs, hs.start("no-runtime"))
    assert reason in log.read_text()
    assert (session["status"], session["failure"]["code"]) == ("failed", "sandbox_unavailable")
    assert reason in session["failure"]["message"]
    assert not (Path(session["workspace"]) / "home" / "user" / "ran").exists()
