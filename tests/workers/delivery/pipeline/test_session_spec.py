"""The session spec's JSON, and its stored record: one document however its parts are kept."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from agents.environment_spec import EnvironmentResource
from tests.agents.conftest import Tree
from tests.conftest import session_spec
from triggers.envelope import build_envelope, envelope_view, session_input
from triggers.json_codec import load_body
from triggers.session.spec import (
    Origin,
    Requester,
    SessionSpec,
    session_json_schema,
)
from triggers.spawn_rules import Grant, build_spec, named_requester, requester_of
from triggers.timestamps import parse_iso
from workers import keys
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import NewDelivery
from workers.session.records import SessionStore

#: an environment with only what every one has
RUNTIME = EnvironmentResource.model_validate(
    {
        "name": "runtime",
        "spec": {
            "image": {"kind": "preset", "name": "node24"},
            "baseImage": "node:24-bookworm-slim",
        },
    }
)


def _spec(input_: dict[str, Any] | None, *, kind: str = "trigger", sid: str = "s-1") -> SessionSpec:
    return session_spec(
        sid, agent="pr-review", origin=kind, display_title="Review #2", input=input_
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
    stored = store.get("s-1")
    assert stored is not None and stored.spec_json() == json.loads(spec.to_bytes())
    assert store.create(spec) is False  # created once


def test_a_session_whose_delivery_is_gone_keeps_its_input(
    redis_client: redis.Redis, webhooks_dir: Path
) -> None:
    spec = _trigger_spec(_body(webhooks_dir))  # no delivery record to copy from
    store = SessionStore(redis_client)
    assert store.create(spec) is True
    assert set(redis_client.hgetall(keys.session("s-1"))) == {b"spec", b"input"}
    stored = store.get("s-1")
    assert stored is not None and stored.spec_json() == json.loads(spec.to_bytes())
    assert stored.spec.input is not None
    assert stored.spec.input["payload"]["github"]["huge"] == 2**70


def test_sessions_without_input_and_listing(redis_client: redis.Redis, webhooks_dir: Path) -> None:
    raw = _body(webhooks_dir)
    _record(redis_client, raw)
    store = SessionStore(redis_client)
    manual = _spec(None, kind="manual", sid="m-1")
    assert store.create(manual) is True
    assert store.create(_trigger_spec(raw, sid="t-1")) is True
    got = store.get("m-1")
    assert got is not None and got.spec_json() == manual.to_json() and got.run is None
    assert got.created_at == parse_iso(manual.created_at)
    listed = store.list()
    assert [s.id for s in listed] == ["t-1", "m-1"]
    assert listed[0].spec.input is not None
    assert listed[0].spec.input["triggerEventId"] == "d-1"
    assert [s.id for s in store.list(agent="pr-review", limit=1)] == ["t-1"]
    assert store.ids() == ["t-1", "m-1"]
    assert store.exists("m-1") and not store.exists("missing")
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
        stored = sessions.get(spec.id)
        assert stored is not None and stored.spec_json() == json.loads(spec.to_bytes())
        assert redis_client.hget(keys.session(spec.id), "body") == redis_client.hget(
            keys.delivery("d-1"), "body"
        )
    assert [s.id for s in sessions.list(agent="pr-review")] == ["t-2", "t-1"]
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
    stored = store.get("s-1")
    assert stored is not None and stored.spec_json() == json.loads(built.to_bytes())


# -- what a compiled agent becomes in the spec: mount addresses, git scope, requester --------

MOUNTS = """\
mounts:
  - kind: git
    repository: Codertocat/Hello-World
    mountPath: /workspace/hello
    ref: main
    auth: {kind: githubApp}
  - kind: git
    repository: git@github.com:Codertocat/Hello-World.git
    mountPath: /workspace/ssh
    ref: main
  - kind: git
    repository: Codertocat/Space
    mountPath: /workspace/space
    ref: "{{payload.github.pullRequest.head.sha}}"
    auth: {kind: githubApp, capabilities: {contents: none}}
  - kind: git
    repository: Codertocat/Ops
    mountPath: /workspace/ops
    ref: main
    auth: {kind: githubApp, capabilities: {contents: read, workflows: write}}
"""


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path / ".auto")


def _agent_spec(tree: Tree, requester: Requester | None = None) -> dict[str, Any]:
    agent = tree.agent(MOUNTS)
    grants: list[Grant | None] = [Grant(7, 70), None, Grant(7, 71), Grant(7, 72)]
    spec = build_spec(
        session_id="s-1",
        agent=agent,
        refs=[m.ref for m in agent.mounts],
        grants=grants,
        texts=(None, None, None),
        session_input=None,
        requester=requester,
        origin=Origin(kind="manual"),
        created_at="2026-12-01T00:00:00Z",
    )
    return spec.to_json()


def test_each_mount_carries_its_url_beside_the_github_repository(tree: Tree) -> None:
    hello, ssh, space, _ = _agent_spec(tree)["mounts"]
    assert (hello["repository"], hello["url"]) == (
        "Codertocat/Hello-World",
        "https://github.com/Codertocat/Hello-World.git",
    )
    assert (ssh["repository"], ssh["url"]) == (
        "Codertocat/Hello-World",
        "git@github.com:Codertocat/Hello-World.git",
    )
    assert space["url"] == "https://github.com/Codertocat/Space.git"


def test_each_github_app_mount_carries_its_git_credential_scope(tree: Tree) -> None:
    hello, ssh, space, ops = _agent_spec(tree)["mounts"]
    assert hello["gitPermissions"] == {"contents": "write", "metadata": "read"}
    assert ssh["gitPermissions"] is None  # auth none: no credential at all
    assert space["gitPermissions"] is None  # contents: none gets no git credential
    assert ops["gitPermissions"] == {"contents": "read", "workflows": "write", "metadata": "read"}
    # the one source: the capabilities' own rule
    agent = tree.agent(MOUNTS)
    assert hello["gitPermissions"] == agent.mounts[0].auth.capabilities.git_permissions()


def test_a_mount_whose_ref_the_event_supplied_says_so(tree: Tree) -> None:
    mounts = _agent_spec(tree)["mounts"]
    assert [m["eventDependent"] for m in mounts] == [False, False, True, False]


def _sender(**sender: Any) -> dict[str, Any]:
    return {"github": {"event": "issue_comment", "sender": sender}}


def test_only_a_human_sender_is_the_requester() -> None:
    human = requester_of(_sender(login="Codertocat", id=21031067, type="User"))
    assert human == Requester(login="Codertocat", id=21031067)
    assert requester_of(_sender(login="hookspawn[bot]", id=9, type="Bot")) is None
    assert requester_of(_sender(login="acme", id=5, type="Organization")) is None
    assert requester_of(_sender(login="Codertocat", id=1)) is None  # no type: not known human
    assert requester_of({"github": {"event": "push"}}) is None


def test_requester_in_the_spec_is_login_and_id_or_null(tree: Tree, webhooks_dir: Path) -> None:
    body = load_body((webhooks_dir / "pull_request/opened.payload.json").read_bytes())
    envelope = build_envelope("pull_request", "d-1", body)
    spec = _agent_spec(tree, requester_of(envelope))
    assert spec["requester"] == {"login": "Codertocat", "id": 21031067}
    assert _agent_spec(tree)["requester"] is None
    # manual starts name a login only; an agent-spawned session inherits its parent's
    assert named_requester("alice") == Requester(login="alice", id=None)
    assert named_requester(None) is None and named_requester("") is None


def test_session_schema_describes_url_git_permissions_and_requester() -> None:
    schema = session_json_schema()
    mount = schema["$defs"]["SessionMount"]
    assert {"url", "repository", "gitPermissions"} <= set(mount["properties"])
    assert "url" in mount["required"]
    requester = schema["$defs"]["Requester"]
    assert set(requester["properties"]) == {"login", "id"}
    assert {"$ref": "#/$defs/Requester"} in schema["properties"]["requester"]["anyOf"]
