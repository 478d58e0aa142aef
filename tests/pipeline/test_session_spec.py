"""The session spec's JSON, and its stored record: one document however its parts are kept."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from triggers.envelope import build_envelope, envelope_view, load_body, session_input
from workers import keys
from workers.deliveries import DeliveryStore, NewDelivery
from workers.session_spec import Origin, SessionEnvironment, SessionSpec
from workers.sessions import SessionStore


def _spec(input_: dict[str, Any] | None, *, kind: str = "trigger", sid: str = "s-1") -> SessionSpec:
    return SessionSpec(
        id=sid,
        agent="pr-review",
        harness="claude",
        environment=SessionEnvironment(name="default", resource={"image": "x"}),
        display_title="Review #2",
        input=input_,
        origin=Origin(kind=kind, delivery_id="d-1" if kind == "trigger" else None),
        created_at="2026-11-29T00:00:00Z",
    )


def _body(webhooks_dir: Path) -> bytes:
    body = load_body((webhooks_dir / "pull_request/opened.payload.json").read_bytes())
    body["huge"] = 2**70
    body["text"] = 'é \u2028 "quoted" \\ {{ 7*7 }}'
    return json.dumps(body).encode()


def _trigger_spec(raw: bytes, sid: str = "s-1") -> SessionSpec:
    envelope = build_envelope("pull_request", "d-1", load_body(raw))
    return _spec(session_input("d-1", envelope), sid=sid)


def _record(client: redis.Redis, raw: bytes) -> DeliveryStore:
    """Delivery d-1 recorded with `raw` as its body; its store."""
    store = DeliveryStore(client, retention=timedelta(days=1))
    new = NewDelivery("d-1", "pull_request", "opened", "Codertocat/Hello-World", 1, "42", raw)
    assert store.record(new)
    return store


def test_spec_bytes_are_the_models_json(webhooks_dir: Path) -> None:
    spec = _trigger_spec(_body(webhooks_dir))
    written = json.loads(spec.to_bytes())
    assert written == json.loads(spec.model_dump_json(by_alias=True))
    assert written["input"]["payload"]["github"]["huge"] == 2**70
    assert written["input"]["payload"]["github"]["pullRequest"]["number"] == 2
    assert set(written) == set(spec.to_json())
    assert json.loads(_spec(None).to_bytes()) == _spec(None).to_json()


def test_a_trigger_session_keeps_the_deliverys_body_not_a_second_payload(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    raw = _body(webhooks_dir)
    _record(redis_client, raw)
    spec = _trigger_spec(raw)
    store = SessionStore(redis_client)
    assert store.create(spec) is True
    record = redis_client.hgetall(keys.session("s-1"))
    assert set(record) == {b"spec", b"event", b"deliveryId", b"body"}
    assert record[b"body"] == redis_client.hget(keys.delivery("d-1"), "body")  # the same bytes
    assert b"pullRequest" not in record[b"spec"]
    assert store.get("s-1") == json.loads(spec.to_bytes())
    assert store.create(spec) is False  # created once


def test_a_session_whose_delivery_is_gone_keeps_its_input(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    spec = _trigger_spec(_body(webhooks_dir))  # no delivery record to copy from
    store = SessionStore(redis_client)
    assert store.create(spec) is True
    assert set(redis_client.hgetall(keys.session("s-1"))) == {b"spec", b"input"}
    stored = store.get("s-1")
    assert stored == json.loads(spec.to_bytes())
    assert stored is not None and stored["input"]["payload"]["github"]["huge"] == 2**70


def test_sessions_without_input_and_listing(redis_client: redis.Redis, webhooks_dir: Path) -> None:
    raw = _body(webhooks_dir)
    _record(redis_client, raw)
    store = SessionStore(redis_client)
    manual = _spec(None, kind="manual", sid="m-1")
    assert store.create(manual) is True
    assert store.create(_trigger_spec(raw, sid="t-1")) is True
    assert store.get("m-1") == manual.to_json()
    listed = store.list()
    assert [s["id"] for s in listed] == ["t-1", "m-1"]
    assert listed[0]["input"]["triggerEventId"] == "d-1"
    assert [s["id"] for s in store.list(agent="pr-review", limit=1)] == ["t-1"]
    assert store.get("missing") is None


def test_a_run_and_its_sessions_are_recorded_in_one_step(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    raw = _body(webhooks_dir)
    deliveries = _record(redis_client, raw)
    specs = [_trigger_spec(raw, sid="t-1"), _trigger_spec(raw, sid="t-2")]
    assert deliveries.finish("d-1", {"run": 1}, status="processed", error=None, sessions=specs)
    sessions = SessionStore(redis_client)
    for spec in specs:
        assert sessions.get(spec.id) == json.loads(spec.to_bytes())
        assert redis_client.hget(keys.session(spec.id), "body") == redis_client.hget(
            keys.delivery("d-1"), "body"
        )
    assert [s["id"] for s in sessions.list(agent="pr-review")] == ["t-2", "t-1"]
    assert [r["status"] for r in deliveries.runs("d-1")] == ["processed"]
    assert redis_client.hget(keys.delivery("d-1"), "status") == b"processed"


def test_a_run_whose_session_exists_writes_nothing(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    """One staged session exists already: no session, no run, the delivery still pending."""
    raw = _body(webhooks_dir)
    deliveries = _record(redis_client, raw)
    sessions = SessionStore(redis_client)
    assert sessions.create(_trigger_spec(raw, sid="t-2"))
    specs = [_trigger_spec(raw, sid="t-1"), _trigger_spec(raw, sid="t-2")]
    done = deliveries.finish("d-1", {"run": 1}, status="processed", error=None, sessions=specs)
    assert done is False
    assert sessions.get("t-1") is None
    assert deliveries.runs("d-1") == []
    assert redis_client.hget(keys.delivery("d-1"), "status") == b"queued"
    assert deliveries.is_pending("d-1")
    # without its sessions the same run is recorded
    assert deliveries.finish("d-1", {"run": 1}, status="processed", error=None)
    assert not deliveries.is_pending("d-1")


def test_a_run_whose_record_is_gone_writes_no_session(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    raw = _body(webhooks_dir)
    deliveries = DeliveryStore(redis_client, retention=timedelta(days=1))
    spec = _trigger_spec(raw, sid="t-1")
    assert not deliveries.finish("d-1", {"run": 1}, status="processed", error=None, sessions=[spec])
    assert SessionStore(redis_client).get("t-1") is None


def test_only_sessions_of_the_delivery_itself_go_with_its_run(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    raw = _body(webhooks_dir)
    deliveries = _record(redis_client, raw)
    manual = _spec(None, kind="manual", sid="m-1")
    with pytest.raises(ValueError, match="m-1 was not spawned by delivery d-1"):
        deliveries.finish("d-1", {"run": 1}, status="processed", error=None, sessions=[manual])
    assert deliveries.runs("d-1") == []


def test_a_spec_whose_input_is_an_envelope_view_is_the_same_document(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    raw = _body(webhooks_dir)
    built = _trigger_spec(raw)
    viewed = _spec(session_input("d-1", envelope_view("pull_request", "d-1", load_body(raw))))
    assert viewed.to_bytes() == built.to_bytes()
    assert viewed.to_json() == built.to_json()
    assert viewed.model_dump_json(by_alias=True) == built.model_dump_json(by_alias=True)
    assert viewed.input_from_delivery == ("pull_request", "d-1")
    store = SessionStore(redis_client)
    assert store.create(viewed)  # no delivery record: the input is stored itself
    assert set(redis_client.hgetall(keys.session("s-1"))) == {b"spec", b"input"}
    assert store.get("s-1") == json.loads(built.to_bytes())
