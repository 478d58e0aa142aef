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
from hookspawn.web.server.http_server import web_config
from tests.conftest import make_settings, wait_for

#: the body deadline is far past the header deadline, so a cut at the header deadline cannot
#: be mistaken for one at the body deadline however slow the machine; the test of the body
#: deadline itself runs with a short one
HEADER_TIMEOUT, BODY_TIMEOUT, SHORT_BODY_TIMEOUT = 0.8, 20.0, 2.0
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


#: what the keep-alive would be were the setting lost
UVICORN_KEEP_ALIVE = uvicorn.Config(echo_length).timeout_keep_alive


@pytest.fixture
def port(request: pytest.FixtureRequest) -> Iterator[int]:
    """A server with these deadlines; its body deadline is the test's parameter, if it has one."""
    body_timeout = getattr(request, "param", BODY_TIMEOUT)
    settings = make_settings(header_timeout=HEADER_TIMEOUT, body_timeout=body_timeout)
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
    with socket.create_connection(("127.0.0.1", port), timeout=BODY_TIMEOUT * 2) as sock:
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
        cut = time.monotonic()
    assert second.startswith(b"HTTP/1.1 408"), second
    assert b"header_timeout" in second
    # the body deadline was armed after `started`: a cut at it comes BODY_TIMEOUT after that at
    # the earliest; the header deadline, armed after `sent`, comes HEADER_TIMEOUT after that
    assert cut - sent >= HEADER_TIMEOUT - 0.05, f"cut {cut - sent:.2f}s after the headers began"
    assert cut - started < BODY_TIMEOUT, (
        f"headers cut {cut - started:.2f}s after the first request: the body deadline "
        f"({BODY_TIMEOUT}s), not the header deadline ({HEADER_TIMEOUT}s), was enforced"
    )


@pytest.mark.parametrize("port", [SHORT_BODY_TIMEOUT], indirect=True)
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
            asked = time.monotonic()
            sock.sendall(request)
            assert read_answer(sock).startswith(b"HTTP/1.1 200"), f"answer {n + 1}"
        answered = time.monotonic()
        assert sock.recv(1) == b"", "the idle connection was not closed"
        closed = time.monotonic()
    # the last answer was sent after `asked` and before `answered`: the keep-alive counts from
    # it, not from the connection's start, and is the one set, not uvicorn's own default
    assert closed - asked >= KEEP_ALIVE - 0.05, f"closed {closed - asked:.2f}s after the request"
    assert closed - answered < UVICORN_KEEP_ALIVE, f"closed {closed - answered:.2f}s after"
