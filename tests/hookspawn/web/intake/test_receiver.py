"""POST /webhooks/github over HTTP with a real Redis: every bad input refused, store untouched."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from hookspawn.serve.redis_server import RedisServer
from hookspawn.web.api import create_app
from tests.conftest import SECRET, make_settings, webhook_headers
from tests.live_server import live_client
from triggers.signature import sign
from workers import keys
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings

QUEUE = "hookspawn"  # the Celery queue's Redis list


@pytest.fixture
def rt(settings: Settings) -> Iterator[Runtime]:
    runtime = build_runtime(settings)
    yield runtime
    runtime.close()


@pytest.fixture
def client(rt: Runtime) -> Iterator[httpx.Client]:
    with live_client(create_app(rt)) as c:
        yield c


def headers(
    body: bytes, *, event: str = "pull_request", delivery: str = "d-1", **extra: str
) -> dict[str, str]:
    return webhook_headers(body, event, delivery, **{"X-GitHub-Hook-ID": "42", **extra})


def snapshot(r: redis.Redis) -> dict[bytes, object]:
    """Every key with its type and content, to prove a request changed nothing."""
    out: dict[bytes, object] = {}
    for key in r.scan_iter():
        kind = r.type(key)
        if kind == b"string":
            out[key] = r.get(key)
        elif kind == b"hash":
            out[key] = r.hgetall(key)
        elif kind == b"list":
            out[key] = r.lrange(key, 0, -1)
        elif kind == b"zset":
            out[key] = r.zrange(key, 0, -1, withscores=True)
        else:
            out[key] = kind
    return out


def test_accepts_and_records(client: httpx.Client, rt: Runtime, webhooks_dir: Path) -> None:
    body = (webhooks_dir / "pull_request/opened.payload.json").read_bytes()
    response = client.post("/webhooks/github", content=body, headers=headers(body))
    assert response.status_code == 202
    assert response.json() == {"deliveryId": "d-1", "status": "queued"}
    record = rt.store.get("d-1")
    assert record is not None
    assert (record.event, record.action, record.repository) == (
        "pull_request",
        "opened",
        "Codertocat/Hello-World",
    )
    assert record.installation_id == 1
    assert record.hook_id == "42"
    assert record.status == "queued"
    assert rt.store.body("d-1") == body
    assert rt.store.is_pending("d-1")
    assert rt.client.llen(QUEUE) == 1
    # stored compressed, and expiring after the retention window
    packed = rt.client.hget(keys.delivery("d-1"), "body")
    assert isinstance(packed, bytes) and len(packed) < len(body)
    ttl = rt.client.ttl(keys.delivery("d-1"))
    assert 3 * 86400 - 60 < ttl <= 3 * 86400


def test_duplicate_records_once_and_enqueues_once(client: httpx.Client, rt: Runtime) -> None:
    body = b'{"action": "opened"}'
    first = client.post("/webhooks/github", content=body, headers=headers(body))
    second = client.post("/webhooks/github", content=body, headers=headers(body))
    assert first.status_code == 202
    assert second.status_code == 200
    assert second.json()["status"] == "duplicate"
    assert rt.client.llen(QUEUE) == 1
    assert rt.client.zcard(keys.DELIVERIES) == 1


def test_form_encoded_payload(client: httpx.Client, rt: Runtime) -> None:
    from urllib.parse import urlencode

    body = urlencode(
        {"payload": json.dumps({"action": "created", "zen": "Keep it simple"})}
    ).encode()
    h = headers(
        body, event="issue_comment", **{"Content-Type": "application/x-www-form-urlencoded"}
    )
    response = client.post("/webhooks/github", content=body, headers=h)
    assert response.status_code == 202
    assert json.loads(rt.store.body("d-1") or b"") == {"action": "created", "zen": "Keep it simple"}


def test_ping_is_200_and_recorded(client: httpx.Client, rt: Runtime, webhooks_dir: Path) -> None:
    body = (
        (webhooks_dir / "ping/payload.json").read_bytes()
        if (webhooks_dir / "ping/payload.json").exists()
        else b'{"zen": "x", "hook_id": 1}'
    )
    response = client.post("/webhooks/github", content=body, headers=headers(body, event="ping"))
    assert response.status_code == 200
    record = rt.store.get("d-1")
    assert record is not None and record.event == "ping"


def _bad_cases() -> list[tuple[str, int, str, dict[str, str | None], bytes]]:
    ok = b'{"action": "opened"}'
    sig = sign(ok, SECRET)
    return [
        ("missing signature", 401, "invalid_signature", {"X-Hub-Signature-256": None}, ok),
        ("sha1 only", 401, "invalid_signature", {"X-Hub-Signature-256": "sha1=" + "0" * 40}, ok),
        ("forged", 401, "invalid_signature", {"X-Hub-Signature-256": sign(ok, "wrong")}, ok),
        ("malformed", 401, "invalid_signature", {"X-Hub-Signature-256": "sha256=xyz"}, ok),
        (
            "signature of another body",
            401,
            "invalid_signature",
            {"X-Hub-Signature-256": sig},
            b'{"action": "closed"}',
        ),
        ("missing event", 400, "invalid_header", {"X-GitHub-Event": None}, ok),
        ("missing delivery", 400, "invalid_header", {"X-GitHub-Delivery": None}, ok),
        ("delivery with slash", 400, "invalid_header", {"X-GitHub-Delivery": "a/b"}, ok),
        ("delivery too long", 400, "invalid_header", {"X-GitHub-Delivery": "a" * 65}, ok),
        ("text/plain", 415, "unsupported_content_type", {"Content-Type": "text/plain"}, ok),
        ("no content type", 415, "unsupported_content_type", {"Content-Type": None}, ok),
        ("not JSON", 400, "invalid_body", {}, b"{not json"),
        ("JSON array", 400, "invalid_body", {}, b"[1, 2]"),
        ("not UTF-8", 400, "invalid_body", {}, b'{"a": "\xff\xfe"}'),
        ("truncated", 400, "invalid_body", {}, ok[:-3]),
        ("deeply nested", 400, "invalid_body", {}, b'{"a":' + b"[" * 10000 + b"]" * 10000 + b"}"),
        (
            "form without payload",
            400,
            "invalid_body",
            {"Content-Type": "application/x-www-form-urlencoded"},
            b"other=1",
        ),
    ]


@pytest.mark.parametrize(
    ("name", "status", "code", "changes", "body"), _bad_cases(), ids=[c[0] for c in _bad_cases()]
)
def test_bad_input_is_refused_and_changes_nothing(
    client: httpx.Client,
    rt: Runtime,
    name: str,
    status: int,
    code: str,
    changes: dict[str, str | None],
    body: bytes,
) -> None:
    h: dict[str, str] = headers(body)
    for key, value in changes.items():
        if value is None:
            h.pop(key, None)
        else:
            h[key] = value
    before = snapshot(rt.client)
    response = client.post("/webhooks/github", content=body, headers=h)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    assert snapshot(rt.client) == before


def test_no_secret_configured_refuses_everything(redis_url: str, tmp_path: Path) -> None:
    rt = build_runtime(make_settings(redis_url=redis_url, webhook_secret=[], data_dir=tmp_path))
    body = b"{}"
    with live_client(create_app(rt)) as c:
        response = c.post("/webhooks/github", content=body, headers=headers(body))
    assert response.status_code == 401
    assert "no webhook secret" in response.json()["error"]["message"]
    assert rt.client.dbsize() == 0


def test_size_is_checked_first_and_413(client: httpx.Client, rt: Runtime) -> None:
    body = b" " * (25 * 1024 * 1024 + 1)
    # no signature at all: size still comes first
    response = client.post(
        "/webhooks/github", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert rt.client.dbsize() == 0


def test_check_order_signature_before_headers(client: httpx.Client) -> None:
    body = b"{}"
    response = client.post("/webhooks/github", content=body, headers={"Content-Type": "text/plain"})
    assert response.status_code == 401


def test_redis_down_is_503_then_recovers(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis").start()
    try:
        rt = build_runtime(make_settings(redis_url=server.url, data_dir=tmp_path))
        with live_client(create_app(rt)) as c:
            body = b'{"action": "opened"}'
            server.kill()
            down = c.post("/webhooks/github", content=body, headers=headers(body, delivery="x-1"))
            assert down.status_code == 503
            assert down.json()["error"]["code"] == "store_unavailable"
            assert down.headers["retry-after"] == "1"
            ready = c.get("/readyz")
            assert ready.status_code == 503
            server.start()
            up = c.post("/webhooks/github", content=body, headers=headers(body, delivery="x-1"))
            assert up.status_code == 202
            assert rt.store.get("x-1") is not None
            assert c.get("/readyz").status_code == 200
    finally:
        server.stop()


def test_too_few_replicas_acknowledging_is_503_yet_the_delivery_is_kept(
    settings: Settings, redis_client: redis.Redis
) -> None:
    """HOOKSPAWN_REDIS_MIN_REPLICAS_ACK=1 against a Redis with no replica: WAIT answers 0."""
    acked = settings.model_copy(update={"redis_min_replicas_ack": 1, "redis_ack_timeout": 20})
    rt = build_runtime(acked)
    try:
        with live_client(create_app(rt)) as c:
            body = b'{"action": "opened"}'
            first = c.post("/webhooks/github", content=body, headers=headers(body, delivery="r-1"))
            again = c.post("/webhooks/github", content=body, headers=headers(body, delivery="r-1"))
    finally:
        rt.close()
    assert first.status_code == 503, first.text
    error = first.json()["error"]
    assert error["code"] == "store_not_replicated"
    assert "only 0 of the 1 replicas" in error["message"]
    assert first.headers["retry-after"] == "1"
    # on the primary, pending and queued all the same (processed like any other)
    assert redis_client.exists(keys.delivery("r-1"))
    assert redis_client.zscore(keys.PENDING, "r-1") is not None
    # a redelivery is not recorded again, and is no more acknowledged than the first
    assert again.status_code == 503
    assert again.json()["error"]["code"] == "store_not_replicated"
    assert redis_client.llen(QUEUE) == 1


def test_get_delivery_shape(client: httpx.Client, webhooks_dir: Path) -> None:
    body = (webhooks_dir / "issues/opened.payload.json").read_bytes()
    client.post(
        "/webhooks/github", content=body, headers=headers(body, event="issues", delivery="i-1")
    )
    view = client.get("/deliveries/i-1").json()
    assert view["deliveryId"] == "i-1"
    assert view["event"] == "issues"
    assert view["action"] == "opened"
    assert view["status"] == "queued"
    assert view["receivedAt"].endswith("Z")
    assert view["processedAt"] is None
    assert view["outcomes"] == []
    missing = client.get("/deliveries/nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "delivery_not_found"


def test_the_routed_endpoint_answers_as_the_app_does(rt: Runtime) -> None:
    """An app that mounts the intake router alone (no fast path before routing) records and
    answers the same way."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from hookspawn.web.intake import receiver

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await receiver.close_recorder(app)

    app = FastAPI(lifespan=lifespan)
    app.state.runtime = rt
    app.include_router(receiver.router)
    body = b'{"action": "opened"}'
    with live_client(app) as c:
        first = c.post("/webhooks/github", content=body, headers=headers(body, delivery="r-1"))
        again = c.post("/webhooks/github", content=body, headers=headers(body, delivery="r-1"))
        forged = c.post(
            "/webhooks/github",
            content=body,
            headers=headers(body, delivery="r-2", **{"X-Hub-Signature-256": "sha256=" + "0" * 64}),
        )
    assert (first.status_code, first.json()) == (202, {"deliveryId": "r-1", "status": "queued"})
    assert first.headers["content-type"] == "application/json"
    assert (again.status_code, again.json()["status"]) == (200, "duplicate")
    assert forged.status_code == 401
    assert forged.json()["error"]["code"] == "invalid_signature"
    assert rt.client.llen(QUEUE) == 1


def test_without_the_pipe_redis_py_records_the_same(rt: Runtime) -> None:
    """The way a TLS Redis is reached (redis-py's asyncio client): same record, same dedup."""
    import asyncio

    from hookspawn.web.intake.receiver import Recorder
    from hookspawn.web.routes.metrics import web_metrics
    from triggers.intake import parse_delivery

    body = b'{"action": "opened", "installation": {"id": 9}}'
    lowered = {k.lower(): v for k, v in headers(body, delivery="tls-1").items()}
    parsed = parse_delivery(lowered, body, [SECRET])

    async def twice() -> tuple[bool, bool]:
        recorder = Recorder(rt, metrics=web_metrics(create_app(rt)), pipe=False)
        try:
            assert recorder.pipe is None
            return await recorder.record(parsed), await recorder.record(parsed)
        finally:
            await recorder.aclose()

    assert asyncio.run(twice()) == (True, False)
    record = rt.store.get("tls-1")
    assert record is not None and record.installation_id == 9
    assert rt.store.body("tls-1") == body
    assert rt.client.llen(QUEUE) == 1
