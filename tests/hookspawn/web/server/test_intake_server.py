"""Intake under `hookspawn web`'s uvicorn configuration, on a real server, Redis and sockets:
its answers, keep-alive, pipelining, closes, failures and the body budget given back."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import pytest
import uvicorn

from hookspawn.serve.redis_server import free_port
from hookspawn.web.api import HookspawnApp, create_app
from hookspawn.web.server.http_server import web_config
from hookspawn.web.server.limits import BodyBudget, GuardedProtocol
from tests.conftest import SECRET, wait_for
from triggers.signature import sign
from workers import keys
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings

BODY = json.dumps(
    {"action": "opened", "repository": {"full_name": "o/r"}, "installation": {"id": 9}}
).encode()


@dataclass
class Served:
    port: int
    rt: Runtime
    server: uvicorn.Server
    app: HookspawnApp
    #: the web process's body budget (what its requests' bodies hold at the moment)
    budget: BodyBudget


@pytest.fixture
def served(settings: Settings) -> Iterator[Served]:
    with serving(settings) as served:
        yield served


@contextmanager
def serving(settings: Settings) -> Iterator[Served]:
    """The real app under `hookspawn web`'s uvicorn configuration, in a thread."""
    rt = build_runtime(settings)
    app = create_app(rt)
    port = free_port()
    server = uvicorn.Server(
        web_config(app, settings, host="127.0.0.1", port=port, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started or not thread.is_alive(), 10, 0.01, what="uvicorn started")
    config = server.config
    served = Served(port, rt, server, app, cast(type[GuardedProtocol], config.http).budget)
    with connect(served) as sock:  # the first request opens intake's connection to the store
        sock.sendall(request("d-warm"))
        assert Answers(sock).next()[0] == 202
    try:
        yield served
    finally:
        server.should_exit = True
        thread.join(10)
        rt.close()


def request(
    delivery: str,
    body: bytes = BODY,
    *,
    event: str = "pull_request",
    version: str = "1.1",
    host: str = "127.0.0.1",
    extra: str = "",
    signature: str | None = None,
) -> bytes:
    return (
        f"POST /webhooks/github HTTP/{version}\r\nHost: {host}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nX-GitHub-Event: {event}\r\n"
        f"X-GitHub-Delivery: {delivery}\r\n"
        f"X-Hub-Signature-256: {signature or sign(body, SECRET)}\r\n{extra}\r\n"
    ).encode() + body


class Answers:
    """The answers arriving on a socket, one at a time (pipelined ones included)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            chunk = self.sock.recv(65536)
            assert chunk, f"the connection closed; received {self.buffer!r}"
            self.buffer += chunk

    def next(self) -> tuple[int, dict[str, str], Any]:
        """The status, headers (lower-case names) and JSON body of the next answer."""
        self._until(lambda: b"\r\n\r\n" in self.buffer)
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        size = int(headers["content-length"])
        self._until(lambda: len(self.buffer) >= size)
        body, self.buffer = self.buffer[:size], self.buffer[size:]
        return int(lines[0].split()[1]), headers, json.loads(body)


def counted(served: Served, event: str, status: str) -> float:
    """hookspawn_deliveries_total{event, status} in the web process's own memory."""
    registry = served.app.state.web_metrics.registry
    labels = {"event": event or "unknown", "status": status}
    return registry.get_sample_value("hookspawn_deliveries_total", labels) or 0.0


def closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    return sock.recv(1) == b""


def connect(served: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.port), timeout=10)


def test_answers_are_the_apps_and_the_connection_stays_open(served: Served) -> None:
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-1"))
        status, headers, body = answers.next()
        assert (status, body) == (202, {"deliveryId": "d-1", "status": "queued"})
        assert headers["content-type"] == "application/json"
        assert int(headers["content-length"]) == len(json.dumps(body, separators=(",", ":")))
        assert "date" in headers and "connection" not in headers
        sock.sendall(request("d-1"))  # the same connection, the same id again
        assert answers.next()[::2] == (200, {"deliveryId": "d-1", "status": "duplicate"})
        sock.sendall(request("d-ping", b'{"zen": "ok"}', event="ping"))
        assert answers.next()[::2] == (200, {"deliveryId": "d-ping", "status": "queued"})
    record = served.rt.store.get("d-1")
    assert record is not None
    assert (record.action, record.repository, record.installation_id) == ("opened", "o/r", 9)
    assert served.rt.client.llen("hookspawn") == 3  # d-warm, d-1 and d-ping


def test_pipelined_requests_are_answered_in_order(served: Served) -> None:
    ids = [f"d-pipe-{n}" for n in range(5)]
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(b"".join(request(i) for i in ids))
        got = [answers.next()[2]["deliveryId"] for _ in ids]
    assert got == ids


@pytest.mark.parametrize(("version", "extra"), [("1.1", "Connection: close\r\n"), ("1.0", "")])
def test_a_connection_that_asks_to_close_is_closed_after_its_answer(
    served: Served, version: str, extra: str
) -> None:
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-close", version=version, extra=extra))
        status, headers, _ = answers.next()
        assert (status, headers["connection"]) == (202, "close")
        assert closed(sock)


def test_refusals_are_counted_once_and_the_connection_serves_on(
    served: Served,
) -> None:
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-bad", signature="sha256=" + "0" * 64))
        status, _, body = answers.next()
        assert (status, body["error"]["code"]) == (401, "invalid_signature")
        sock.sendall(request("d-host", host="evil.example"))
        status, _, body = answers.next()
        assert (status, body["error"]["code"]) == (421, "misdirected_request")
        sock.sendall(request("d-after"))  # the connection still serves
        assert answers.next()[0] == 202
    assert served.rt.store.get("d-bad") is None and served.rt.store.get("d-host") is None
    assert counted(served, "", "invalid_signature") == 1  # counted once, by the app
    assert counted(served, "pull_request", "queued") == 2  # d-warm and d-after


def test_a_body_over_64kb_and_an_expected_continue_are_recorded(served: Served) -> None:
    big = json.dumps({"action": "opened", "pad": "x" * 70_000}).encode()  # over 64 KB
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-big", big))
        assert answers.next()[0] == 202
        head, body = request("d-expect", extra="Expect: 100-continue\r\n").split(b"\r\n\r\n", 1)
        sock.sendall(head + b"\r\n\r\n")
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        assert answers.next()[0] == 202
    assert served.rt.store.get("d-big") is not None and served.rt.store.get("d-expect")


def test_a_record_that_fails_is_answered_503(served: Served) -> None:
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-ok"))  # opens intake's connection to the store
        assert answers.next()[0] == 202
        served.rt.client.delete(keys.PENDING)
        served.rt.client.set(keys.PENDING, "not a sorted set")  # the script's ZADD fails
        sock.sendall(request("d-fails"))
        status, _, body = answers.next()
        assert (status, body["error"]["code"]) == (503, "store_unavailable")
        served.rt.client.delete(keys.PENDING)
        sock.sendall(request("d-later"))
        assert answers.next()[0] == 202
    assert counted(served, "pull_request", "store_unavailable") == 1


def test_a_client_gone_before_its_answer_leaves_its_delivery_recorded(served: Served) -> None:
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-gone"))
    wait_for(lambda: served.rt.store.get("d-gone") is not None, 10, what="d-gone recorded")
    with connect(served) as sock:
        answers = Answers(sock)
        sock.sendall(request("d-next"))
        assert answers.next()[0] == 202
    wait_for(lambda: served.budget.held == 0, 10, what="every body's bytes given back")


def test_behind_trusted_proxies_intake_records(settings: Settings) -> None:
    """uvicorn's proxy-header middleware wraps the app: intake answers the same."""
    with serving(settings.model_copy(update={"trusted_proxies": ["127.0.0.1"]})) as served:
        with connect(served) as sock:
            sock.sendall(request("d-proxied", extra="X-Forwarded-For: 10.0.0.9\r\n"))
            assert Answers(sock).next()[0] == 202
        assert served.rt.store.get("d-proxied") is not None


def test_each_answer_gives_its_bodys_bytes_back_while_the_connection_stays(
    served: Served,
) -> None:
    with connect(served) as sock:
        answers = Answers(sock)
        for n in range(3):
            sock.sendall(request(f"d-held-{n}"))
            assert answers.next()[0] == 202
            assert served.budget.held == 0  # answered: given back, the connection still open
        sock.sendall(request("d-held-3"))
        assert answers.next()[0] == 202
    assert served.budget.held == 0


def test_what_the_parser_refuses_is_answered_400_and_the_connection_closed(
    served: Served,
) -> None:
    with connect(served) as sock:
        sock.sendall(
            b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n"
        )
        status, headers, body = Answers(sock).next()
        assert (status, body["error"]["code"]) == (400, "invalid_request")
        assert headers["connection"] == "close"
        assert closed(sock)
    assert served.budget.held == 0
