"""The admin API never listens beyond loopback by accident (SPEC §14)."""

from __future__ import annotations

import pytest

from workers.cli import _parser
from workers.exposure import is_loopback, open_admin_refusal, open_admin_warning

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
    assert _parser().parse_args([command]).allow_open_admin is False
    assert _parser().parse_args([command, "--allow-open-admin"]).allow_open_admin is True
