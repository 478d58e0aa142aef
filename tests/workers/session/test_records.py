"""Stored sessions read as typed sessions (workers/session/records.py), against a real Redis: the
records keep the shape they were written in, older shapes included, and a record that does not
read as one names the session and the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import cast

import pytest
import redis

from triggers.body_codec import pack
from triggers.session.spec import Requester
from workers import keys
from workers.errors import SessionRecordInvalid
from workers.session.records import SessionStore
from workers.session.runs import SessionRuns
from workers.session.status import SessionStatus

#: a spec as the first versions stored it: before mounts carried `eventDependent` and
#: `gitPermissions`, before `broker`, and with `requester` a bare login
OLD_SPEC = {
    "id": "old-1",
    "agent": "pr-review",
    "harness": "claude-code",
    "environment": {
        "name": "default",
        "resource": {
            "name": "default",
            "spec": {
                "image": {"kind": "preset", "name": "node24"},
                "baseImage": "node:24-bookworm-slim",
            },
        },
    },
    "systemPrompt": None,
    "tools": [],
    "env": {},
    "mounts": [
        {
            "repository": "acme/widgets",
            "url": "https://github.com/acme/widgets.git",
            "mountPath": "widgets",
            "ref": "main",
            "depth": 1,
            "auth": "none",
        }
    ],
    "workingDirectory": None,
    "displayTitle": "Review",
    "initialPrompt": None,
    "message": None,
    "requester": "octocat",
    "origin": {"kind": "manual"},
    "depth": 2,
    "createdAt": "2026-11-29T10:11:12.345678Z",
}


def _store_raw(client: redis.Redis, session_id: str, **fields: bytes) -> None:
    """A session record as given, indexed after those stored before it."""
    client.hset(keys.session(session_id), mapping=dict(fields.items()))
    client.zadd(keys.SESSIONS, {session_id: float(client.zcard(keys.SESSIONS))})


def test_a_record_written_before_fields_were_added_loads_and_is_not_rewritten(
    redis_client: redis.Redis,
) -> None:
    spec = json.dumps(OLD_SPEC).encode()
    packed = pack(json.dumps({"note": "hand-made", "n": 2**70}).encode())
    _store_raw(redis_client, "old-1", spec=spec, input=packed)
    before = redis_client.hgetall(keys.session("old-1"))
    store = SessionStore(redis_client)
    found = store.get("old-1")
    assert found is not None
    assert found.id == "old-1" and found.agent == "pr-review"
    assert found.created_at == datetime(2026, 11, 29, 10, 11, 12, 345678, tzinfo=UTC)
    assert found.spec.requester == Requester(login="octocat", id=None)
    assert found.spec.depth == 2
    mount = found.spec.mounts[0]
    assert (mount.event_dependent, mount.git_permissions) == (False, None)
    assert found.spec.broker is None
    assert found.spec.input == {"note": "hand-made", "n": 2**70}
    # no run record: dispatched, or not yet queued
    assert (found.run, found.status, found.ended_at) == (None, None, None)
    assert found.updated_at == found.created_at
    assert [s.id for s in store.list()] == ["old-1"]
    # reading changes nothing: the record keeps the shape it was written in
    assert redis_client.hgetall(keys.session("old-1")) == before


def test_a_session_reads_with_its_run_record_times_as_datetimes(
    redis_client: redis.Redis,
) -> None:
    _store_raw(redis_client, "s-1", spec=json.dumps({**OLD_SPEC, "id": "s-1"}).encode())
    runs = SessionRuns(redis_client)
    runs.queue("s-1", workspace="/w/s-1", ttl=3600)
    assert runs.claim("s-1", "runner-a", 30)
    assert runs.note_harness(
        "s-1",
        "runner-a",
        harness={"name": "claude-code", "version": "2.0"},
        result="done",
        usage={"inputTokens": 5, "outputTokens": 7, "turns": 1},
    )
    failure = {"code": "harness_failed", "message": "it stopped"}
    assert runs.advance("s-1", "runner-a", SessionStatus.FAILED, failure)
    stored = cast(dict[bytes, bytes], redis_client.hgetall(keys.session_run("s-1")))
    raw_run = {k.decode(): v.decode() for k, v in stored.items()}
    found = SessionStore(redis_client).get("s-1")
    assert found is not None and found.run is not None
    run = found.run
    assert found.status is SessionStatus.FAILED and run.owner == "runner-a"
    assert run.failure is not None and run.failure.code == "harness_failed"
    assert run.harness is not None and (run.harness.name, run.harness.version) == (
        "claude-code",
        "2.0",
    )
    assert run.usage is not None and run.usage.output_tokens == 7
    assert set(run.times) == {"queued", "staging", "failed", "ended"}
    assert all(at.tzinfo is not None for at in run.times.values())
    assert found.ended_at == run.times["ended"] == found.updated_at
    assert run.ordered_times()[0][0] == "queued"
    # the API's fields: each as the run record holds it, times as they were written
    shown = run.to_json()
    assert shown["times"] == {
        name[: -len("At")]: value for name, value in raw_run.items() if name.endswith("At")
    }
    assert shown["failure"] == failure
    assert shown["usage"] == {"inputTokens": 5, "outputTokens": 7, "turns": 1}
    assert shown["harness"] == shown["harnessRun"] == {"name": "claude-code", "version": "2.0"}
    assert (shown["status"], shown["result"], shown["workspace"]) == ("failed", "done", "/w/s-1")
    assert found.to_json()["harness"] == shown["harness"]  # the run's harness over the spec's
    # a listing by status keeps the sessions whose run has it (one with no run has none)
    _store_raw(redis_client, "s-2", spec=json.dumps({**OLD_SPEC, "id": "s-2"}).encode())
    store = SessionStore(redis_client)
    assert [s.id for s in store.list()] == ["s-2", "s-1"]
    assert [s.id for s in store.list(status=SessionStatus.FAILED)] == ["s-1"]
    assert store.list(status=SessionStatus.QUEUED) == []


def test_exists_reads_no_record_and_a_bad_record_names_the_session_and_field(
    redis_client: redis.Redis,
) -> None:
    store = SessionStore(redis_client)
    _store_raw(redis_client, "bad-1", spec=b"not json")
    assert store.exists("bad-1") and not store.exists("none")
    with pytest.raises(SessionRecordInvalid, match="session bad-1"):
        store.get("bad-1")
    missing = {k: v for k, v in OLD_SPEC.items() if k != "origin"}
    _store_raw(redis_client, "bad-2", spec=json.dumps(missing).encode())
    with pytest.raises(SessionRecordInvalid, match=r"session bad-2: .*not a session spec: origin"):
        store.get("bad-2")
    late = {**OLD_SPEC, "createdAt": "yesterday"}
    _store_raw(redis_client, "bad-3", spec=json.dumps(late).encode())
    with pytest.raises(SessionRecordInvalid, match="createdAt 'yesterday'") as caught:
        store.get("bad-3")
    assert caught.value.details == {"sessionId": "bad-3", "field": "createdAt"}
    _store_raw(redis_client, "s-4", spec=json.dumps({**OLD_SPEC, "id": "s-4"}).encode())
    redis_client.hset(keys.session_run("s-4"), mapping={"status": "queued", "queuedAt": "soon"})
    with pytest.raises(SessionRecordInvalid, match="session s-4: its run record's queuedAt"):
        store.get("s-4")
    redis_client.hset(keys.session_run("s-4"), mapping={"status": "lost", "queuedAt": "soon"})
    with pytest.raises(SessionRecordInvalid, match="run record's status"):
        store.get("s-4")
