"""`hookspawn web --workers N`: N processes answer on one port under a supervising parent,
which replaces a child that dies, stops them all on SIGTERM and exits 0; a bad start is one
line."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookspawn.serve.redis_server import RedisServer, free_port
from tests.conftest import wait_for
from tests.hookspawn.cli.test_cli_behaviour import in_process, one_line
from tests.procs import Proc, alive
from tests.suite_marks import marks_tests
from tests.web_processes import (
    ask,
    remote_ports,
    served_by,
    serving_pid,
    start_web,
    web_children,
)

ADMIN_TOKEN = "processes-admin-token-4f1c"
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _start(redis_url: str, root: Path) -> tuple[Proc, int]:
    settings = {
        "HOOKSPAWN_REDIS_URL": redis_url,
        "HOOKSPAWN_DATA_DIR": str(root / "data"),
        "HOOKSPAWN_ADMIN_TOKEN": ADMIN_TOKEN,
    }
    port = free_port()
    return start_web(root / "web.log", port, settings, workers=2), port


@pytest.fixture
@marks_tests("slow")
def web(redis_url: str, tmp_path: Path) -> Iterator[tuple[Proc, int]]:
    """A web of two processes of the test's own: the test stops or kills it."""
    proc, port = _start(redis_url, tmp_path)
    try:
        yield proc, port
    finally:
        proc.stop()


@pytest.fixture(scope="module")
@marks_tests("slow")
def shared_web(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Proc, int]]:
    """A web of two processes that the module's tests only ask things of."""
    proc, port = _start(redis_server.url, tmp_path_factory.mktemp("shared-web"))
    try:
        yield proc, port
    finally:
        proc.stop()


def test_both_processes_serve_connections_on_the_one_port(
    shared_web: tuple[Proc, int], redis_server: RedisServer
) -> None:
    proc, port = shared_web
    redis_port = redis_server.port
    children = web_children(proc)
    assert len(children) == 2 and proc.pid not in children
    assert f"serving http://127.0.0.1:{port} from 2 web processes" in proc.log_text()
    # 32 connections at once: the kernel spreads them over the two processes' sockets; the
    # parent holds none
    tally = served_by(port, [proc.pid, *children], 32)
    assert sorted(tally) == children, tally
    assert sum(tally.values()) == 32
    # each serving process has its own Redis connection; the parent has none to hand down
    for pid in children:
        status, _, _ = ask(port, pid, children, "GET", "/metrics", headers=BEARER)  # reads Redis
        assert status == 200
    assert all(redis_port in remote_ports(pid) for pid in children)
    assert redis_port not in remote_ports(proc.pid)


def holder(port: int, sock: socket.socket, pids: list[int]) -> int:
    """The process of `pids` that accepted the connection `sock` (waiting for one to)."""
    client = sock.getsockname()[1]
    found: list[int] = []

    def accepted() -> bool:
        pid = serving_pid(port, client, pids)
        if pid is not None:
            found.append(pid)
        return pid is not None

    wait_for(accepted, 30, 0.02, what="a web process holding the connection")
    return found[-1]


def received(socks: list[socket.socket]) -> list[bytes]:
    """What has arrived on each socket so far (read without waiting)."""
    got = []
    for sock in socks:
        sock.setblocking(False)
        try:
            got.append(sock.recv(4096, socket.MSG_PEEK))
        except BlockingIOError:
            got.append(b"")
    return got


def test_each_process_holds_its_own_connection_cap(redis_url: str, tmp_path: Path) -> None:
    """HOOKSPAWN_MAX_CONNECTIONS is per process: whichever process the kernel hands a
    connection to admits it while it holds fewer, and answers 503 past them."""
    cap, count = 3, 16
    settings = {
        "HOOKSPAWN_REDIS_URL": redis_url,
        "HOOKSPAWN_DATA_DIR": str(tmp_path / "data"),
        "HOOKSPAWN_MAX_CONNECTIONS": str(cap),
        "HOOKSPAWN_HEADER_TIMEOUT": "120s",  # admitted idle connections stay open meanwhile
    }
    port = free_port()
    proc = start_web(tmp_path / "web.log", port, settings, workers=2)
    socks: list[socket.socket] = []
    try:
        children = web_children(proc)
        held: dict[int, list[socket.socket]] = {pid: [] for pid in children}
        for _ in range(count):  # one at a time: each held by its process before the next
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=30))
            held[holder(port, socks[-1], children)].append(socks[-1])
        for pid, conns in held.items():
            refused = max(0, len(conns) - cap)
            wait_for(
                lambda conns=conns, refused=refused: (  # type: ignore[misc]
                    sum(1 for got in received(conns) if got) >= refused
                ),
                60,
                0.05,
                what=f"process {pid}'s refusals",
            )
            statuses = sorted(got[:12] for got in received(conns) if got)
            assert statuses == [b"HTTP/1.1 503"] * refused, (pid, len(conns), statuses)
            # the ones it admitted were answered nothing: they wait for their headers
            assert len(conns) - len(statuses) == min(len(conns), cap)
    finally:
        for sock in socks:
            sock.close()
        proc.stop()


@pytest.mark.parametrize(
    ("sig", "to_group"),
    [(signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGHUP, True)],
    ids=["sigterm-to-the-parent", "ctrl-c-to-the-group", "hangup-to-the-group"],
)
def test_a_stop_signal_stops_every_process_and_the_parent_exits_0(
    web: tuple[Proc, int], sig: signal.Signals, to_group: bool
) -> None:
    proc, port = web
    children = web_children(proc)
    if to_group:  # as a terminal does: the parent and its children get it
        os.killpg(proc.pid, sig)
    else:  # the parent alone, as a service manager does
        os.kill(proc.pid, sig)
    assert proc.popen.wait(60) == 0, proc.tail()
    assert not any(alive(pid) for pid in children)
    log = proc.log_text()
    assert f"{sig.name}: stopping 2 web process(es)" in log
    for pid in children:
        assert f"Finished server process [{pid}]" in log
    assert "starting another" not in log  # no stopped process taken for a death
    assert "Traceback" not in log
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nobody listens any more


def test_a_killed_process_is_replaced_and_once_the_parent_is_killed_every_process_stops(
    web: tuple[Proc, int],
) -> None:
    proc, port = web
    first, second = web_children(proc)
    os.kill(first, signal.SIGKILL)

    def replaced() -> bool:
        now = web_children(proc)
        return len(now) == 2 and first not in now and second in now

    wait_for(replaced, 60, 0.1, what=lambda: f"a replacement for {first}:\n{proc.tail()}")
    assert (
        f"web process {first} was killed by signal 9 (SIGKILL); starting another" in proc.log_text()
    )
    (third,) = set(web_children(proc)) - {second}
    # a connection the kernel gives the replacement's socket waits there until it serves
    tally = served_by(port, [second, third], 32)
    assert sorted(tally) == sorted([second, third]), tally
    assert proc.alive()

    # the parent killed outright: its processes, the replacement too, stop by themselves
    os.kill(proc.pid, signal.SIGKILL)
    proc.popen.wait(10)
    wait_for(
        lambda: not any(alive(pid) for pid in (second, third)),
        60,
        0.2,
        what="the orphans stopping",
    )
    assert "its supervising process is gone; stopping" in proc.log_text()


def test_a_ui_login_made_through_one_process_is_honoured_and_ended_by_the_other(
    shared_web: tuple[Proc, int],
) -> None:
    proc, port = shared_web
    first, second = children = web_children(proc)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, headers, _ = ask(
        port, first, children, "POST", "/ui/login", f"token={ADMIN_TOKEN}".encode(), form
    )
    assert status == 303
    cookie = headers["set-cookie"].split(";", 1)[0]
    assert cookie.startswith("hookspawn_session=")
    signed_in = {"Cookie": cookie}
    assert ask(port, second, children, "GET", "/deliveries", headers=signed_in)[0] == 200
    out = {**signed_in, "Sec-Fetch-Site": "same-origin"}
    assert ask(port, second, children, "POST", "/ui/logout", headers=out)[0] == 303
    assert ask(port, first, children, "GET", "/deliveries", headers=signed_in)[0] == 401


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("0", "0 is not a number of processes from 1 to 64"),
        ("65", "65 is not a number of processes from 1 to 64"),
        ("-2", "-2 is not a number of processes from 1 to 64"),
        ("two", "not a whole number: 'two'"),
    ],
)
def test_a_number_of_processes_out_of_range_is_one_line(
    given: str, why: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = in_process(capsys, monkeypatch, "web", "--workers", given)
    assert done.returncode == 2
    assert one_line(done) == (
        f"hookspawn web: argument --workers: {why} (see `hookspawn web --help`)"
    )


def test_a_missing_redis_url_is_one_line_with_several_processes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = one_line(in_process(capsys, monkeypatch, "web", "--workers", "2"))
    assert line.startswith("hookspawn web: set HOOKSPAWN_REDIS_URL to the Redis "), line
