"""`hookspawn web --workers N` in tests: start it, and reach one chosen process of it.

Which process serves a connection is read from /proc: the server side of a TCP connection
(its local port the web's, its remote port the client's) is a socket inode, held open by the
one process that accepted it.
"""

from __future__ import annotations

import http.client
import os
from collections.abc import Mapping
from pathlib import Path

from hookspawn.serve.redis_server import free_port
from tests.conftest import wait_for
from tests.procs import HOOKSPAWN, Proc, children_of, environment, launch, wait_answering

#: how long anything may take on a busy 2-core machine before a wait fails
STARTUP_TIMEOUT = 60.0


def start_web(log: Path, port: int, settings: Mapping[str, str], *, workers: int = 2) -> Proc:
    """`hookspawn web --workers N` on 127.0.0.1:port, answering /healthz, every one of its
    processes serving (a process stopped while it starts exits before it serves)."""
    argv = [
        *HOOKSPAWN,
        "web",
        "--port",
        str(port),
        "--broker-port",
        str(free_port()),
        "--workers",
        str(workers),
    ]
    proc = launch("web", argv, env=environment(settings), log=log)
    try:
        wait_answering(proc, f"http://127.0.0.1:{port}", STARTUP_TIMEOUT)
        wait_for(
            lambda: proc.log_text().count("Application startup complete.") >= workers,
            STARTUP_TIMEOUT,
            0.05,
            what=lambda: f"{workers} web processes serving:\n{proc.tail()}",
        )
    except BaseException:
        proc.stop()
        raise
    return proc


def web_children(proc: Proc) -> list[int]:
    return sorted(children_of(proc.pid))


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[len("socket:[") : -1])
    except OSError:
        pass
    return found


def serving_pid(server_port: int, client_port: int, pids: list[int]) -> int | None:
    """The process among `pids` holding the server side of the connection from `client_port`."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == (
            client_port
        ):
            inodes.add(inode)
    for pid in pids:
        if inodes & _socket_inodes(pid):
            return pid
    return None


def remote_ports(pid: int) -> set[int]:
    """The remote ports of the TCP connections process `pid` holds."""
    inodes = _socket_inodes(pid)
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes and fields[3] == "01":  # ESTABLISHED
            found.add(int(fields[2].split(":")[1], 16))
    return found


def connection_to(
    port: int, pid: int, pids: list[int], tries: int = 200
) -> http.client.HTTPConnection:
    """A kept-alive connection to 127.0.0.1:port that process `pid` (one of `pids`) serves."""
    for _ in range(tries):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/healthz")
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 200
        if serving_pid(port, conn.sock.getsockname()[1], pids) == pid:
            return conn
        conn.close()
    raise AssertionError(f"{tries} connections to port {port}, none served by process {pid}")


def ask(
    port: int,
    pid: int,
    pids: list[int],
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """`method path` through a connection process `pid` serves: status, headers, body."""
    conn = connection_to(port, pid, pids)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        answer = conn.getresponse()
        return answer.status, answer.headers, answer.read()
    finally:
        conn.close()


def served_by(port: int, pids: list[int], count: int) -> dict[int, int]:
    """Open `count` connections at once, a request answered on each; how many each process
    of `pids` serves (None for one no process holds)."""
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(count)]
    try:
        for conn in conns:
            conn.connect()
        tally: dict[int, int] = {}
        for conn in conns:
            conn.request("GET", "/healthz")
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 200
            pid = serving_pid(port, conn.sock.getsockname()[1], pids)
            assert pid is not None, f"no process of {pids} holds the connection"
            tally[pid] = tally.get(pid, 0) + 1
        return tally
    finally:
        for conn in conns:
            conn.close()
