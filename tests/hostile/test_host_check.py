"""DNS rebinding: a request for a Host this server does not answer to is refused 421 before any
route runs, over real HTTP (uvicorn on 127.0.0.1), with no admin token (the loopback default)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from hookspawn.web.api import create_app
from hookspawn.web.server.host_check import HostPolicy, bracket_problem, host_name
from tests.conftest import make_settings, webhook_headers
from tests.live_server import live_client
from tests.workers.delivery.pipeline.conftest import write_agents
from workers.runtime import build_runtime

AGENTS = {
    "agents/plain.yaml": """
        name: plain
        harness: claude-code
        environment:
          name: runtime
          image: {kind: preset, name: node24}
    """,
}


@contextmanager
def server(tmp_path: Path, redis_url: str, **settings: Any) -> Iterator[httpx.Client]:
    auto = write_agents(tmp_path, AGENTS)
    rt = build_runtime(
        make_settings(redis_url=redis_url, data_dir=tmp_path / "data", agents_dir=auto, **settings)
    )
    try:
        with live_client(create_app(rt)) as client:
            yield client
    finally:
        rt.close()


def as_host(client: httpx.Client, host: str) -> dict[str, str]:
    """Headers of a browser on a page of `host` (a name the attacker points at 127.0.0.1),
    sending to this server's port: Host and a matching Origin."""
    port = urlsplit(str(client.base_url)).port
    return {"Host": f"{host}:{port}", "Origin": f"http://{host}:{port}"}


def refused(answer: httpx.Response, host: str) -> None:
    assert answer.status_code == 421, answer.text
    error = answer.json()["error"]
    assert error["code"] == "misdirected_request"
    assert host in error["message"] and "HOOKSPAWN_ALLOWED_HOSTS" in error["message"]
    assert error["details"]["host"].startswith(host)


def test_a_rebound_name_reaches_no_route(tmp_path: Path, redis_url: str) -> None:
    with server(tmp_path, redis_url) as client:
        evil = as_host(client, "evil.example")
        start = client.post("/agents/plain/sessions", json={}, headers=evil)
        listed = client.get("/deliveries", headers=evil)
        body = b"{}"
        intake = client.post(
            "/webhooks/github",
            content=body,
            headers={**webhook_headers(body, "ping", "d-rebind"), **evil},
        )
        docs = client.get("/openapi.json", headers=evil)
        # the same requests by the loopback names are answered by their routes
        own = as_host(client, "127.0.0.1")
        started = client.post("/agents/plain/sessions", json={}, headers=own)
        sessions = client.get("/sessions", headers=as_host(client, "localhost")).json()["items"]
        recorded = client.get("/deliveries/d-rebind").status_code
        health = [
            client.get("/healthz", headers={"Host": host}).status_code
            for host in ("localhost", "LOCALHOST.:1", "127.0.0.1", "127.8.9.10:80", "[::1]:8000")
        ]
    refused(start, "evil.example")
    refused(listed, "evil.example")
    refused(intake, "evil.example")
    refused(docs, "evil.example")
    assert started.status_code == 201, started.text
    # the refused start created nothing: only the one started by a loopback name exists
    assert [s["id"] for s in sessions] == [started.json()["id"]]
    assert recorded == 404, "the refused delivery was recorded"
    assert health == [200] * 5


def test_allowed_hosts_and_the_public_url_are_answered(tmp_path: Path, redis_url: str) -> None:
    with server(
        tmp_path,
        redis_url,
        allowed_hosts=["web", "hooks.internal:8443"],
        public_url="https://hookspawn.example.com/base",
    ) as client:
        answers = {
            host: client.get("/deliveries", headers=as_host(client, host)).status_code
            for host in ("web", "hooks.internal", "hookspawn.example.com", "evil.example")
        }
        refusal = client.get("/deliveries", headers=as_host(client, "webx"))
    assert answers == {
        "web": 200,
        "hooks.internal": 200,
        "hookspawn.example.com": 200,
        "evil.example": 421,
    }
    refused(refusal, "webx")


def test_the_document_lists_421_on_every_operation(tmp_path: Path, redis_url: str) -> None:
    with server(tmp_path, redis_url) as client:
        document = client.get("/openapi.json").json()
    operations = [op for ops in document["paths"].values() for op in ops.values()]
    assert operations
    for operation in operations:
        answer = operation["responses"]["421"]
        assert "misdirected_request" in answer["description"]
        schema = answer["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}


def test_a_bind_beyond_loopback_with_no_names_answers_every_host_and_says_so(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(redis_url=redis_url, data_dir=tmp_path / "data")
    rt = build_runtime(settings)
    try:
        with caplog.at_level(logging.WARNING, logger="hookspawn.web.api"):
            create_app(rt, bound_host="0.0.0.0")
            create_app(rt, bound_host="127.0.0.1")
    finally:
        rt.close()
    said = [r.getMessage() for r in caplog.records if "every Host" in r.getMessage()]
    assert len(said) == 1, said
    assert "0.0.0.0" in said[0] and "HOOKSPAWN_ALLOWED_HOSTS" in said[0]


@pytest.mark.parametrize(
    ("bound", "public_url", "allowed", "host", "accepted"),
    [
        ("0.0.0.0", None, [], "anything.example", True),
        ("::", None, [], "anything.example", True),
        # serve hands its children the URL it listens on: 0.0.0.0 names no host
        ("0.0.0.0", "http://0.0.0.0:8000", [], "anything.example", True),
        ("0.0.0.0", "https://hooks.example.com", [], "anything.example", False),
        ("0.0.0.0", "https://hooks.example.com", [], "HOOKS.example.com:443", True),
        ("0.0.0.0", None, ["web"], "anything.example", False),
        ("0.0.0.0", None, ["web"], "web:8000", True),
        ("0.0.0.0", None, ["*"], "anything.example", True),
        ("10.1.2.3", None, ["web"], "10.1.2.3:8000", True),
        ("myhost.internal", None, ["web"], "myhost.internal", True),
        ("127.0.0.1", None, [], "evil.example", False),
        ("127.0.0.1", None, [], "127.0.0.1.evil.example", False),
        ("localhost", None, [], "localhost.evil.example", False),
        ("127.0.0.1", None, [], "[::1]:1", True),
        ("127.0.0.1", None, [], None, True),
    ],
)
def test_which_hosts_a_policy_accepts(
    bound: str, public_url: str | None, allowed: list[str], host: str | None, accepted: bool
) -> None:
    policy = HostPolicy.of(bound=bound, public_url=public_url, allowed=allowed)
    assert policy.accepts(host) is accepted


def test_host_names_drop_the_port_brackets_case_and_trailing_dot() -> None:
    assert [host_name(v) for v in ("Web.:80", "[::1]:8000", "::1", "a.B", "h:1")] == [
        "web",
        "::1",
        "::1",
        "a.b",
        "h",
    ]


def test_a_malformed_allowed_host_stops_the_settings() -> None:
    for bad in ("http://web", "web/path", "we b"):
        with pytest.raises(ValueError, match="not a host name"):
            make_settings(allowed_hosts=bad)
    assert make_settings(allowed_hosts="web, [::1]:8000,*").allowed_hosts == [
        "web",
        "[::1]:8000",
        "*",
    ]
    assert make_settings().allowed_hosts == []


MALFORMED = {
    "[::1].evil": "follows the bracketed address",
    "[::1]evil.example": "follows the bracketed address",
    "[::1]:80.evil": "follows the bracketed address",
    "[::1]:": "follows the bracketed address",
    "[::1%25eth0]": "zone",
    "[::1%eth0]:8000": "zone",
    "[127.0.0.1]": "not an IPv6 address",
    "[::1": "never closed",
}


def test_a_bracketed_host_is_an_ipv6_address_and_only_a_port_may_follow(
    tmp_path: Path, redis_url: str
) -> None:
    body = b"{}"
    with server(tmp_path, redis_url) as client:
        answers = {host: client.get("/deliveries", headers={"Host": host}) for host in MALFORMED}
        # the webhook path: a plain POST the connection would answer itself, the same rule
        intake = client.post(
            "/webhooks/github",
            content=body,
            headers={**webhook_headers(body, "ping", "d-bracket"), "Host": "[::1].evil"},
        )
        recorded = client.get("/deliveries/d-bracket").status_code
        well_formed = [
            client.get("/healthz", headers={"Host": host}).status_code
            for host in ("[::1]", "[::1]:8000", "[0:0:0:0:0:0:0:1]:1")
        ]
    for host, why in MALFORMED.items():
        answer = answers[host]
        assert answer.status_code == 400, (host, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "malformed_host", host
        assert why in error["message"] and host in error["message"], error
    assert intake.status_code == 400 and intake.json()["error"]["code"] == "malformed_host"
    assert recorded == 404, "the delivery with a malformed Host was recorded"
    assert well_formed == [200] * 3


@pytest.mark.parametrize("host", sorted(MALFORMED))
def test_no_policy_accepts_a_malformed_bracketed_host(host: str) -> None:
    for bound in ("127.0.0.1", "0.0.0.0"):
        policy = HostPolicy.of(bound=bound, public_url=None, allowed=["*"])
        assert policy.accepts(host) is False, (bound, host)
    assert bracket_problem(host) is not None
    assert bracket_problem("[::1]:8000") is None and bracket_problem("localhost:1") is None
