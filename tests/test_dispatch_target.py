"""The HTTP dispatch target stand-in treats a request cut off mid-body as a real server does."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

from tests import loopback
from tests.conftest import wait_for
from tests.dispatch_target import dispatch_target


def test_a_body_cut_short_is_refused_and_creates_no_session() -> None:
    with dispatch_target() as target:
        url = urlsplit(target.url)
        with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
            # a sender killed after its headers, before its body
            sock.sendall(
                f"POST {url.path} HTTP/1.1\r\nHost: x\r\nIdempotency-Key: hs-1\r\n"
                "Content-Type: application/json\r\nContent-Length: 40\r\n\r\n".encode()
            )
            sock.shutdown(socket.SHUT_WR)
            answer = sock.recv(200)
        assert answer.startswith(b"HTTP/1.0 400")
        wait_for(lambda: target.truncated > 0, 5, 0.01, what="the cut-short body counted")
        assert target.truncated == 1
        assert target.received == [] and target.sessions == {}

        # the same key sent whole afterwards is created, once
        spec = {"id": "hs-1", "agent": "a"}
        created = loopback.post(
            target.url, content=json.dumps(spec), headers={"Idempotency-Key": "hs-1"}
        )
        again = loopback.post(
            target.url, content=json.dumps(spec), headers={"Idempotency-Key": "hs-1"}
        )
        assert (created.status_code, again.status_code) == (201, 409)
        assert target.sessions == {"hs-1": spec}
