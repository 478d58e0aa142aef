"""The admin API never listens beyond loopback by accident."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hookspawn.cli.parser import build_parser
from hookspawn.exposure import is_loopback, open_admin_refusal, open_admin_warning
from tests.conftest import wait_for
from tests.procs import environment, launch

HOOKSPAWN = str(Path(sys.executable).parent / "hookspawn")
LOOPBACK = ["127.0.0.1", "127.3.2.1", "localhost", "LOCALHOST", "::1", "[::1]"]
OPEN = ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "example.internal", "", "128.0.0.1"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_need_no_token(host: str) -> None:
    assert is_loopback(host)
    assert open_admin_refusal("web", host, token=None, allowed=False) is None
    assert open_admin_warning(host, 8000, token=None) is None


@pytest.mark.parametrize("host", OPEN)
def test_other_hosts_need_the_token_or_the_flag(host: str) -> None:
    assert not is_loopback(host)
    refusal = open_admin_refusal("serve", host, token=None, allowed=False)
    assert refusal is not None
    assert refusal.startswith(f"hookspawn serve: refusing to listen on {host} ")
    assert "HOOKSPAWN_ADMIN_TOKEN" in refusal
    assert "--allow-open-admin" in refusal
    assert open_admin_refusal("serve", host, token="t0ken", allowed=False) is None
    assert open_admin_warning(host, 8000, token="t0ken") is None
    # the explicit opt-out starts, with a warning logged at start
    assert open_admin_refusal("serve", host, token=None, allowed=True) is None
    warning = open_admin_warning(host, 8000, token=None)
    assert warning is not None
    assert f"{host}:8000 is open to anyone" in warning


@pytest.mark.parametrize("command", ["web", "serve"])
def test_the_flag_is_off_unless_given(command: str) -> None:
    assert build_parser().parse_args([command]).allow_open_admin is False
    assert build_parser().parse_args([command, "--allow-open-admin"]).allow_open_admin is True


def test_web_opened_on_purpose_warns_at_start(tmp_path: Path) -> None:
    """Run in a network namespace of its own (`unshare`): 0.0.0.0 there reaches nothing."""
    # never reached: nothing is sent
    env = environment(
        {"HOOKSPAWN_REDIS_URL": "redis://127.0.0.1:1/0", "HOOKSPAWN_WEBHOOK_SECRET": "w3bhook"}
    )
    argv = ["unshare", "-rn", HOOKSPAWN, "web", "--host", "0.0.0.0", "--allow-open-admin"]
    proc = launch("web", argv, env=env, log=tmp_path / "web.log", cwd=tmp_path)
    try:

        def listening() -> bool:
            if not proc.alive():
                pytest.fail(f"web exited with {proc.popen.returncode}:\n{proc.log_text()}")
            return "Uvicorn running on http://0.0.0.0:8000" in proc.log_text()

        wait_for(listening, timeout=60)
        first = proc.log_text().splitlines()[0]
        assert "WARNING" in first
        assert "the admin API on 0.0.0.0:8000 is open to anyone who can reach it" in first
        # and which webhook secret it verifies with, in one line (never the secret itself)
        said = [line for line in proc.log_text().splitlines() if "webhook secret: " in line]
        assert len(said) == 1 and said[0].endswith("webhook secret: HOOKSPAWN_WEBHOOK_SECRET")
        assert "w3bhook" not in proc.log_text()
    finally:
        proc.stop(60)
