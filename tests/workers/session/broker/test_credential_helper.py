"""git-credential-hookspawn as git runs it: the installed console script, stdin and stdout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.workers.session.broker.conftest import HELPERS, BrokerEnv

pytestmark = pytest.mark.slow

HELPER = str(HELPERS / "git-credential-hookspawn")
ASKED = "protocol=https\nhost=github.com\npath=acme/widgets.git\n\n"


def _run(
    operation: str,
    env: dict[str, str],
    stdin: str = ASKED,
    cwd: Path | None = None,
    options: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    return subprocess.run(
        [HELPER, *options, operation],
        input=stdin,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=30,
        cwd=cwd,
    )


def test_get_answers_git_and_store_erase_do_nothing(broker_env: BrokerEnv, tmp_path: Path) -> None:
    writer = broker_env.start("writer")
    env = {
        "HOOKSPAWN_BROKER_URL": broker_env.broker_url(writer),
        "HOOKSPAWN_SESSION_CREDENTIAL": writer.credential,
    }
    here = tmp_path / "helper-cwd"
    here.mkdir()
    got = _run("get", env, cwd=here)
    assert got.returncode == 0, got.stderr
    lines = dict(line.split("=", 1) for line in got.stdout.splitlines())
    assert lines["username"] == "x-access-token"
    assert broker_env.github.permissions_on("acme/widgets", lines["password"]) == {
        "contents": "write",
        "metadata": "read",
    }
    assert int(lines["password_expiry_utc"]) > 0
    for operation in ("store", "erase"):
        done = _run(operation, env, stdin=ASKED + f"username=x\npassword={lines['password']}\n\n")
        assert (done.returncode, done.stdout) == (0, "")
    assert list(here.iterdir()) == []  # nothing written where it ran


def test_refusals_are_one_line_and_stop_git(broker_env: BrokerEnv) -> None:
    missing = _run("get", {})
    assert missing.returncode == 1
    assert missing.stdout == "quit=1\n"
    assert missing.stderr.strip() == (
        "git-credential-hookspawn: HOOKSPAWN_BROKER_URL and HOOKSPAWN_SESSION_CREDENTIAL must "
        "both be set"
    )
    reader = broker_env.start("reader")
    env = {
        "HOOKSPAWN_BROKER_URL": broker_env.broker_url(reader),
        "HOOKSPAWN_SESSION_CREDENTIAL": reader.credential,
    }
    elsewhere = _run("get", env, stdin="protocol=https\nhost=evil.example\npath=acme/widgets\n\n")
    assert elsewhere.returncode == 1
    assert len(elsewhere.stderr.strip().splitlines()) == 1
    assert "HTTP 404 mount_not_found" in elsewhere.stderr
    bad = _run("get", {**env, "HOOKSPAWN_BROKER_URL": "http://127.0.0.1:notaport/x"})
    assert bad.returncode == 1
    assert "HOOKSPAWN_BROKER_URL is not a usable URL" in bad.stderr
    usage = _run("frobnicate", env)
    assert usage.returncode == 2
    assert "usage: git-credential-hookspawn [--mount-path=PATH] get|store|erase" in usage.stderr
    for options in (("--mount-path=",), ("--mount=/w",), ("/w",)):
        wrong = _run("get", env, options=options)
        assert (wrong.returncode, wrong.stdout) == (2, ""), options
        assert "usage:" in wrong.stderr


def test_the_mount_path_option_names_the_checkouts_mount(broker_env: BrokerEnv) -> None:
    """Staging configures each checkout's helper with its mountPath: one repository mounted
    twice gets each mount's own credential for the same URL."""
    session = broker_env.start("twice")
    env = {
        "HOOKSPAWN_BROKER_URL": broker_env.broker_url(session),
        "HOOKSPAWN_SESSION_CREDENTIAL": session.credential,
    }
    scopes = {}
    for mount in ("/w/ro", "/w/rw"):
        got = _run("get", env, options=(f"--mount-path={mount}",))
        assert got.returncode == 0, got.stderr
        password = dict(line.split("=", 1) for line in got.stdout.splitlines())["password"]
        scopes[mount] = broker_env.github.permissions_on("acme/widgets", password)
    assert scopes == {
        "/w/ro": {"contents": "read", "metadata": "read"},
        "/w/rw": {"contents": "write", "workflows": "write", "metadata": "read"},
    }
    missing = _run("get", env, options=("--mount-path=/w/none",))
    assert missing.returncode == 1
    assert "HTTP 404 mount_not_found" in missing.stderr
