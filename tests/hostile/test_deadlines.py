"""The header and body deadlines of one keep-alive connection, request after request.

One timer per connection enforces both deadlines; it is moved only when it fires. These
check that whatever the timer was last armed for, each request gets its own deadlines: a
slow body past the header deadline is not cut, and the next request's slow headers are cut
at their own deadline, not at the longer body deadline the timer was last armed for.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from hookspawn.serve.redis_server import free_port
from hookspawn.web.http_server import web_config
from tests.conftest import make_settings, wait_for

HEADER_TIMEOUT, BODY_TIMEOUT = 0.8, 5.0
KEEP_ALIVE = 1  # seconds (uvicorn takes a whole number)


async def echo_length(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"%d" % size
    headers = [(b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def port() -> Iterator[int]:
    settings = make_settings(header_timeout=HEADER_TIMEOUT, body_timeout=BODY_TIMEOUT)
    port = free_port()
    config = web_config(echo_length, settings, host="127.0.0.1", port=port, access_log=False)
    config.lifespan = "off"
    config.timeout_keep_alive = KEEP_ALIVE
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started or not thread.is_alive(), 10, 0.01, what="uvicorn started")
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def read_answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def test_each_request_on_a_connection_gets_its_own_deadlines(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n12345")
        time.sleep(HEADER_TIMEOUT + 0.4)  # past the header deadline, within the body's
        sock.sendall(b"67890")
        first = read_answer(sock)
        assert first.startswith(b"HTTP/1.1 200") and first.endswith(b"\r\n\r\n10"), first
        # the timer fired in the body phase and was re-armed for the body deadline; the next
        # request's headers never finish and must be cut at their own deadline
        sent = time.monotonic()
        sock.sendall(b"POST /b HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        second = read_answer(sock)
        cut_after = time.monotonic() - sent
    assert second.startswith(b"HTTP/1.1 408"), second
    assert b"header_timeout" in second
    # cut at the body deadline, it would come after about BODY_TIMEOUT - 1.2 s = 3.8 s
    assert cut_after < HEADER_TIMEOUT + 1.5, (
        f"headers cut after {cut_after:.2f}s: the body deadline ({BODY_TIMEOUT}s), not the "
        f"header deadline ({HEADER_TIMEOUT}s), was enforced"
    )
    assert time.monotonic() - started < 10


def test_a_body_slower_than_its_deadline_is_cut(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n123")
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"body_timeout" in answer


def test_keep_alive_counts_from_the_last_answer(port: int) -> None:
    """One timer a connection keeps the keep-alive: a connection busy for longer than the
    keep-alive, never idle that long, stays open; idle, it closes that long after its last
    answer."""
    request = b"POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nok"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for n in range(4):  # 1.8 s in all, never idle for the keep-alive's 1 s
            if n:
                time.sleep(KEEP_ALIVE * 0.6)
            sock.sendall(request)
            assert read_answer(sock).startswith(b"HTTP/1.1 200"), f"answer {n + 1}"
        answered = time.monotonic()
        assert sock.recv(1) == b"", "the idle connection was not closed"
        idle = time.monotonic() - answered
    assert KEEP_ALIVE - 0.05 <= idle < KEEP_ALIVE + 1.5, f"closed {idle:.2f}s after the answer"
