"""The index upkeep: the delivery, dead-letter and session indexes trimmed to their retention
by the worker, off the write path; a delivery's runs kept in (and read back from) its record,
and its dead letter dropped by a replay (a successful finish no longer looks)."""

from __future__ import annotations

from datetime import timedelta

import redis

from tests.conftest import wait_for
from workers import keys
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import NewDelivery
from workers.delivery.sweep import Sweeper
from workers.delivery.upkeep import IndexUpkeep, upkeep_interval

NOW = 1_800_000_000.0
RETENTION = 100
SESSION_RETENTION = 50


def upkeep(client: redis.Redis, **kwargs: int) -> IndexUpkeep:
    return IndexUpkeep(
        client,
        retention_seconds=RETENTION,
        session_retention_seconds=SESSION_RETENTION,
        **kwargs,
    )


def test_one_pass_trims_every_index_to_its_retention(redis_client: redis.Redis) -> None:
    client = redis_client
    for index in (keys.DELIVERIES, keys.DEAD):
        client.zadd(index, {"old": NOW - RETENTION - 1, "fresh": NOW - RETENTION + 1})
    client.expire(keys.DELIVERIES, 3600)  # as an older version wrote it: must not expire whole
    for index in (keys.SESSIONS, keys.agent_sessions("both")):
        client.zadd(index, {"old": NOW - SESSION_RETENTION - 1, "fresh": NOW - 1})
    client.zadd(keys.agent_sessions("idle"), {"old": NOW - SESSION_RETENTION - 1})
    client.hset(keys.SWEPT, mapping={"finished": 1, "still-pending": 2})
    client.zadd(keys.PENDING, {"still-pending": NOW})

    assert upkeep(client).run_once(now=NOW) == 6

    for index in (keys.DELIVERIES, keys.DEAD, keys.SESSIONS, keys.agent_sessions("both")):
        assert client.zrange(index, 0, -1) == [b"fresh"], index
    assert client.exists(keys.agent_sessions("idle")) == 0  # trimmed to nothing: gone
    assert client.ttl(keys.DELIVERIES) == -1
    assert client.hgetall(keys.SWEPT) == {b"still-pending": b"2"}  # the finished one's count
    assert upkeep(client).run_once(now=NOW) == 0  # idempotent
    # walks done in one pass leave no cursor behind
    assert client.exists(keys.UPKEEP_CURSOR, keys.UPKEEP_SWEPT_CURSOR) == 0


def test_the_walk_over_agent_indexes_goes_on_where_the_last_pass_stopped(
    redis_client: redis.Redis,
) -> None:
    client = redis_client
    agents = [f"agent-{n}" for n in range(40)]
    for agent in agents:
        client.zadd(keys.agent_sessions(agent), {"old": NOW - SESSION_RETENTION - 1})
    small = upkeep(client, scan_count=1, scan_steps=1)  # a few keys of the database per pass
    small.run_once(now=NOW)
    assert client.get(keys.UPKEEP_CURSOR) not in (None, b"0")  # where the next pass goes on
    assert any(client.exists(keys.agent_sessions(a)) for a in agents)
    passes = 1
    while any(client.exists(keys.agent_sessions(a)) for a in agents):
        small.run_once(now=NOW)
        passes += 1
        assert passes < 1000
    while client.exists(keys.UPKEEP_CURSOR):  # the walk ends, and leaves no key behind
        small.run_once(now=NOW)
        passes += 1
        assert passes < 1000


def test_one_process_runs_a_pass_per_interval(redis_client: redis.Redis) -> None:
    client = redis_client
    first, second = upkeep(client), upkeep(client)
    assert first.run_if_due() is True
    client.zadd(keys.DELIVERIES, {"old": 1.0})
    assert second.run_if_due() is False  # another process ran one less than an interval ago
    assert client.zscore(keys.DELIVERIES, "old") == 1.0
    assert 0 < client.pttl(keys.UPKEEP_LOCK) <= first.interval * 1000


def test_the_interval_is_a_minute_or_a_hundredth_of_the_shorter_retention() -> None:
    assert upkeep_interval(3 * 86400, 3 * 86400) == 60.0
    assert upkeep_interval(3 * 86400, 1800) == 18.0
    assert upkeep_interval(2, 2) == 1.0


def test_the_sweeper_runs_the_upkeep(redis_client: redis.Redis) -> None:
    client = redis_client
    store = DeliveryStore(client, retention=timedelta(seconds=RETENTION))
    client.zadd(keys.DELIVERIES, {"old": 1.0, "fresh": 4_000_000_000.0})
    client.zadd(keys.agent_sessions("idle"), {"old": 1.0})
    sweeper = Sweeper(store, lambda _: None, interval=0.05, upkeep=upkeep(client)).start()
    try:
        wait_for(lambda: client.zscore(keys.DELIVERIES, "old") is None, timeout=10)
        wait_for(lambda: not client.exists(keys.agent_sessions("idle")), timeout=10)
    finally:
        sweeper.stop()
    assert client.zrange(keys.DELIVERIES, 0, -1) == [b"fresh"]


def test_a_deliverys_runs_are_read_back_from_its_record(redis_client: redis.Redis) -> None:
    client = redis_client
    store = DeliveryStore(client, retention=timedelta(seconds=RETENTION))
    store.record(NewDelivery("d-1", "push", None, "o/r", None, None, b"{}"))
    assert store.runs("d-1") == []
    assert store.last_runs(["d-1", "unknown"]) == [None, None]
    store.fail("d-1", "internal_error", "ValueError: broken")
    assert store.finish("d-1", {"run": 2, "outcomes": []}, status="processed", error=None)

    runs = store.runs("d-1")
    assert [(r["status"], r.get("error")) for r in runs] == [
        ("failed", "internal_error"),
        ("processed", None),
    ]
    assert runs[1]["run"] == 2
    record = store.get("d-1")
    assert record is not None and (record.runs, record.error) == (2, None)
    last = store.last_runs(["d-1", "unknown"])
    assert last[1] is None and last[0] is not None and b'"run":2' in last[0]
    assert 0 < client.ttl(keys.delivery("d-1")) <= RETENTION  # the runs expire with the record
    assert client.exists(f"{keys.delivery('d-1')}:runs") == 0


def test_a_replay_takes_the_delivery_off_the_dead_letters(redis_client: redis.Redis) -> None:
    client = redis_client
    store = DeliveryStore(client, retention=timedelta(seconds=RETENTION))
    store.record(NewDelivery("d-1", "push", None, "o/r", None, None, b"{}"))
    store.fail("d-1", "internal_error", "ValueError: broken")
    assert client.zscore(keys.DEAD, "d-1") is not None
    assert store.requeue("d-1")
    assert client.zscore(keys.DEAD, "d-1") is None  # queued again: no dead letter
    assert store.finish("d-1", {"outcomes": []}, status="processed", error=None)
    assert client.zscore(keys.DEAD, "d-1") is None
