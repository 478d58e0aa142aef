"""Session records are kept HOOKSPAWN_SESSION_RETENTION, then expire; the worker's index
upkeep trims their index entries after them, so storage stays bounded whatever the traffic."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from tests.conftest import make_settings, wait_for
from tests.github_standin import GitHubStandin
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, start_hookspawn
from workers import keys
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import NewDelivery
from workers.delivery.upkeep import IndexUpkeep

RETENTION = 2  # seconds


def upkeep(client: redis.Redis) -> IndexUpkeep:
    """The upkeep the worker runs, with both retentions at RETENTION."""
    return IndexUpkeep(client, retention_seconds=RETENTION, session_retention_seconds=RETENTION)


@pytest.fixture
def short(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(
        tmp_path,
        redis_url,
        github,
        webhooks_dir,
        session_retention=timedelta(seconds=RETENTION),
    )


def test_sessions_expire_after_their_retention_and_leave_no_index_behind(
    short: Hookspawn,
) -> None:
    hs = short
    connect(hs)
    client = hs.rt.client
    # a trigger-spawned session (written with its delivery's run) and a manual one
    delivery = hs.send("pull_request", hs.pr())
    view = hs.processed(delivery)
    spawned = {o["sessionId"] for o in view["outcomes"] if o["outcome"] == "dispatched"}
    assert len(spawned) == 2
    manual = hs.client.post("/agents/nightly/sessions")
    assert manual.status_code == 201, manual.text
    ids = {*spawned, manual.json()["id"]}
    for session_id in ids:
        assert hs.client.get(f"/sessions/{session_id}").status_code == 200
        assert 0 < int(client.ttl(keys.session(session_id))) <= RETENTION
    assert {s["id"] for s in hs.sessions()} == ids
    indexes = [keys.SESSIONS, *(keys.agent_sessions(a) for a in ("pr-review", "nightly"))]
    wait_for(lambda: not any(client.exists(keys.session(s)) for s in ids), timeout=20)
    for session_id in ids:
        assert hs.client.get(f"/sessions/{session_id}").status_code == 404
    assert hs.sessions() == []
    # the index entries outlive their records until the upkeep's next pass
    assert all(client.exists(index) for index in indexes)
    upkeep(client).run_once()
    assert not any(client.exists(index) for index in indexes)
    # the delivery itself is kept for its own retention
    assert hs.client.get(f"/deliveries/{delivery}").status_code == 200

    # a new session is listed alone: what an index held past the retention is trimmed
    client.zadd(keys.SESSIONS, {"long-gone": 1.0})
    again = hs.client.post("/agents/nightly/sessions", headers={"Idempotency-Key": "n-2"})
    assert again.status_code == 201, again.text
    upkeep(client).run_once()
    assert client.zscore(keys.SESSIONS, "long-gone") is None
    assert [s["id"] for s in hs.sessions()] == [again.json()["id"]]


def test_session_retention_defaults_to_the_delivery_retention() -> None:
    assert make_settings(retention=timedelta(hours=5)).sessions_kept == timedelta(hours=5)
    assert make_settings().sessions_kept == timedelta(days=3)
    chosen = make_settings(session_retention="90m")
    assert chosen.sessions_kept == timedelta(minutes=90)


def test_the_delivery_index_and_the_dead_letters_are_bounded_too(
    redis_client: redis.Redis,
) -> None:
    store = DeliveryStore(redis_client, retention=timedelta(seconds=RETENTION))
    store.record(NewDelivery("r-1", "push", None, "o/r", None, None, b"{}"))
    # a dead letter older than the retention (its record is gone: nothing to replay)
    redis_client.zadd(keys.DEAD, {"long-gone": 1.0})
    store.fail("r-1", "internal_error", "ValueError: broken")
    upkeep(redis_client).run_once()
    assert redis_client.zscore(keys.DEAD, "long-gone") is None
    assert redis_client.zscore(keys.DEAD, "r-1") is not None
    assert redis_client.zscore(keys.DELIVERIES, "r-1") is not None
    wait_for(lambda: not redis_client.exists(keys.delivery("r-1")), timeout=20)
    upkeep(redis_client).run_once()
    assert redis_client.exists(keys.DELIVERIES, keys.DEAD) == 0
