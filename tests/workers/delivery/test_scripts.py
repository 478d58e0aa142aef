"""Every branch of every Lua script, run directly against the session's real redis-server."""

from __future__ import annotations

import zlib
from typing import Any, cast

import pytest
import redis

from tests.conftest import session_spec, wait_for
from triggers.envelope import build_envelope, session_input
from triggers.session.spec import SessionSpec
from workers import keys
from workers.delivery import scripts
from workers.delivery.scripts import Arg, finish_call
from workers.session.records import CREATE

NOW = 1_800_000_000.0
TTL = 3600
BODY = zlib.compress(b'{"action":"opened"}')


def run(client: redis.Redis, script: str, keys_: list[str], args: list[Arg]) -> Any:
    return client.register_script(script)(keys=keys_, args=args)


def hash_of(client: redis.Redis, key: str) -> dict[str, str]:
    raw = cast(dict[bytes, bytes], client.hgetall(key))
    return {k.decode(): v.decode("latin-1") for k, v in raw.items()}


def record(
    client: redis.Redis, delivery_id: str = "d-1", *, message: bytes = b"task", now: float = NOW
) -> int:
    """RECORD with the layout `DeliveryStore.record` sends: a lease of 30 s."""
    return int(
        run(
            client,
            scripts.RECORD,
            [keys.delivery(delivery_id), keys.DELIVERIES, keys.PENDING, "queue"],
            [delivery_id, TTL, now, now + 30, message, "event", "issues", "body", BODY],
        )
    )


def trigger_spec(sid: str, delivery_id: str = "d-1") -> SessionSpec:
    envelope = build_envelope("issues", delivery_id, {"action": "opened"})
    return session_spec(sid, delivery_id=delivery_id, input=session_input(delivery_id, envelope))


def finish(
    client: redis.Redis,
    status: str = "processed",
    *,
    error: str = "",
    owner: str = "",
    sessions: tuple[SessionSpec, ...] = (),
) -> int:
    keys_, args = finish_call(
        "d-1",
        status=status,
        now=NOW + 5,
        error=error,
        run=b'{"run":1}',
        owner=owner,
        sessions=sessions,
        session_retention=TTL,
    )
    return int(run(client, scripts.FINISH, keys_, args))


# RECORD: the intake's record and its dedup -----------------------------------------------


def test_record_writes_the_record_indexes_and_queues_the_task(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.DELIVERIES, {"old": NOW - TTL - 1})
    assert record(client) == 1
    assert hash_of(client, keys.delivery("d-1"))["event"] == "issues"
    assert 0 < client.ttl(keys.delivery("d-1")) <= TTL
    assert client.zscore(keys.DELIVERIES, "d-1") == NOW
    # older than the retention, but left to the worker's upkeep (workers/delivery/upkeep.py)
    assert client.zscore(keys.DELIVERIES, "old") == NOW - TTL - 1
    assert client.ttl(keys.DELIVERIES) == -1
    assert client.zscore(keys.PENDING, "d-1") == NOW + 30
    assert client.lrange("queue", 0, -1) == [b"task"]


def test_record_of_a_known_delivery_writes_nothing(redis_client: redis.Redis) -> None:
    client = redis_client
    assert record(client) == 1
    client.zadd(keys.PENDING, {"d-1": 1})
    assert record(client, message=b"again", now=NOW + 60) == 0
    assert client.lrange("queue", 0, -1) == [b"task"]
    assert client.zscore(keys.DELIVERIES, "d-1") == NOW
    assert client.zscore(keys.PENDING, "d-1") == 1


def test_record_without_a_message_queues_nothing(redis_client: redis.Redis) -> None:
    assert record(redis_client, message=b"") == 1
    assert redis_client.zscore(keys.PENDING, "d-1") == NOW + 30
    assert redis_client.exists("queue") == 0


# CLAIM: fresh, busy, done, lease expired, record gone --------------------------------------


def claim(client: redis.Redis, owner: str, *, lease_ms: int = 30_000) -> list[Any]:
    return cast(
        list[Any],
        run(
            client,
            scripts.CLAIM,
            [
                keys.delivery_lock("d-1"),
                keys.PENDING,
                keys.delivery("d-1"),
                keys.INSTALLATIONS_GENERATION,
            ],
            [owner, lease_ms, NOW + 99, "d-1"],
        ),
    )


def test_claim_of_a_fresh_delivery(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    client.set(keys.INSTALLATIONS_GENERATION, "gen-7")
    state, fields, generation = claim(client, "worker-a")
    assert state == b"claimed"
    assert dict(zip(fields[::2], fields[1::2], strict=True))[b"event"] == b"issues"
    assert generation == b"gen-7"
    assert client.get(keys.delivery_lock("d-1")) == b"worker-a"
    assert 0 < client.pttl(keys.delivery_lock("d-1")) <= 30_000
    assert client.zscore(keys.PENDING, "d-1") == NOW + 99
    counted = hash_of(client, keys.delivery("d-1"))
    assert (counted["claims"], counted["attempts"]) == ("1", "1")


def test_claim_whose_fresh_lease_is_the_deadline_it_had_is_claimed_too(
    redis_client: redis.Redis,
) -> None:
    client = redis_client
    record(client)
    client.zadd(keys.PENDING, {"d-1": NOW + 99})  # the deadline the claim sets: nothing moves
    assert claim(client, "worker-a")[0] == b"claimed"
    assert hash_of(client, keys.delivery("d-1"))["attempts"] == "1"


def test_claim_while_another_owner_holds_it_is_busy(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    assert claim(client, "worker-a")[0] == b"claimed"
    assert claim(client, "worker-b") == [b"busy"]
    assert client.get(keys.delivery_lock("d-1")) == b"worker-a"
    assert hash_of(client, keys.delivery("d-1"))["attempts"] == "1"
    assert client.zscore(keys.PENDING, "d-1") == NOW + 99


def test_claim_of_a_done_delivery_is_skipped_and_drops_the_lock(
    redis_client: redis.Redis,
) -> None:
    client = redis_client
    record(client)
    client.zrem(keys.PENDING, "d-1")
    assert claim(client, "worker-a") == [b"skipped"]
    assert client.exists(keys.delivery_lock("d-1")) == 0
    assert "attempts" not in hash_of(client, keys.delivery("d-1"))


def test_claim_after_the_lease_expired_goes_to_the_next_owner(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    assert claim(client, "worker-a", lease_ms=1)[0] == b"claimed"
    wait_for(lambda: client.exists(keys.delivery_lock("d-1")) == 0)
    assert claim(client, "worker-b")[0] == b"claimed"
    assert client.get(keys.delivery_lock("d-1")) == b"worker-b"
    assert hash_of(client, keys.delivery("d-1"))["attempts"] == "2"


def test_claim_of_a_pending_delivery_whose_record_expired(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.PENDING, {"d-1": NOW})
    assert claim(client, "worker-a") == [b"claimed", [], None]
    assert client.exists(keys.delivery("d-1")) == 0  # no counter hash made from nothing


# CLAIM_DUE: the sweep ------------------------------------------------------------------


def sweep(client: redis.Redis, *, limit: int = 10, max_attempts: int = 3) -> list[list[bytes]]:
    return cast(
        list[list[bytes]],
        run(
            client,
            scripts.CLAIM_DUE,
            [keys.PENDING, keys.SWEPT],
            [NOW, 10, limit, keys.delivery(""), max_attempts],
        ),
    )


def test_sweep_with_nothing_due(redis_client: redis.Redis) -> None:
    redis_client.zadd(keys.PENDING, {"later": NOW + 1})
    assert sweep(redis_client) == [[], []]
    assert redis_client.zscore(keys.PENDING, "later") == NOW + 1
    assert redis_client.exists(keys.SWEPT) == 0


def test_sweep_claims_due_deliveries_for_ever_longer_leases(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.PENDING, {"d-1": NOW - 1})
    assert sweep(client) == [[b"d-1"], []]
    assert client.zscore(keys.PENDING, "d-1") == NOW + 10 * 2
    client.zadd(keys.PENDING, {"d-1": NOW - 1})
    assert sweep(client) == [[b"d-1"], []]
    assert client.zscore(keys.PENDING, "d-1") == NOW + 10 * 4
    client.hset(keys.SWEPT, "d-1", 9)
    client.zadd(keys.PENDING, {"d-1": NOW - 1})
    sweep(client)
    assert client.zscore(keys.PENDING, "d-1") == NOW + 10 * 32  # capped at 2^5


def test_sweep_sets_deliveries_out_of_attempts_apart(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.PENDING, {"spent": NOW - 2, "fresh": NOW - 1})
    client.hset(keys.delivery("spent"), "attempts", 3)
    client.hset(keys.delivery("fresh"), "attempts", 2)
    assert sweep(client) == [[b"fresh"], [b"spent"]]
    assert client.hget(keys.SWEPT, "spent") == b"1"


def test_sweep_takes_at_most_its_limit_oldest_first(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.PENDING, {"a": NOW - 3, "b": NOW - 2, "c": NOW - 1})
    assert sweep(client, limit=2) == [[b"a", b"b"], []]
    assert client.zscore(keys.PENDING, "c") == NOW - 1


# FINISH --------------------------------------------------------------------------------


def test_finish_records_the_run_and_releases_its_own_lock(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    client.hset(keys.SWEPT, "d-1", 2)
    claim(client, "worker-a")
    assert finish(client, owner="worker-a") == 1
    fields = hash_of(client, keys.delivery("d-1"))
    assert (fields["status"], fields["processedAt"], fields["runs"], fields["error"]) == (
        "processed",
        repr(NOW + 5),
        "1",
        "",  # none
    )
    assert fields["run:1"] == '{"run":1}'  # the run is kept in the record, expiring with it
    assert client.zscore(keys.PENDING, "d-1") is None
    assert client.hget(keys.SWEPT, "d-1") == b"2"  # left to the worker's upkeep
    assert client.zscore(keys.DEAD, "d-1") is None
    assert client.exists(keys.delivery_lock("d-1")) == 0


def test_finish_counts_each_run_in_its_own_field(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    assert finish(client, "failed", error="internal_error: boom") == 1
    assert finish(client) == 1
    fields = hash_of(client, keys.delivery("d-1"))
    assert (fields["runs"], fields["run:1"], fields["run:2"]) == ("2", '{"run":1}', '{"run":1}')
    assert fields["error"] == ""  # the second run's: none
    last = run(client, scripts.LAST_RUN, [keys.delivery("d-1")], [])
    assert last == b'{"run":1}'
    assert run(client, scripts.LAST_RUN, [keys.delivery("d-2")], []) is None


def test_finish_failed_is_a_dead_letter(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    assert finish(client, "failed", error="internal_error: boom") == 1
    assert hash_of(client, keys.delivery("d-1"))["error"] == "internal_error: boom"
    assert client.zscore(keys.DEAD, "d-1") == NOW + 5
    assert client.ttl(keys.DEAD) == -1  # trimmed by the worker's upkeep, never expired whole


def test_finish_of_a_dead_letter_a_late_worker_processed_takes_it_off(
    redis_client: redis.Redis,
) -> None:
    client = redis_client
    record(client)
    client.zadd(keys.DEAD, {"other": NOW})
    assert finish(client, "failed", error="attempts_exhausted: all used") == 1
    assert finish(client) == 1  # the worker the sweep gave up on finished after all
    assert client.zscore(keys.DEAD, "d-1") is None
    assert client.zscore(keys.DEAD, "other") == NOW


def test_finish_leaves_a_lock_it_does_not_own(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    claim(client, "worker-b")
    assert finish(client, owner="worker-a") == 1
    assert client.get(keys.delivery_lock("d-1")) == b"worker-b"
    assert finish(client) == 1  # no owner: the lock is not touched either
    assert client.get(keys.delivery_lock("d-1")) == b"worker-b"


def test_finish_of_an_expired_record_only_clears_the_indexes(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.PENDING, {"d-1": NOW})
    assert finish(client) == 1
    assert client.exists(keys.delivery("d-1")) == 0
    assert client.zscore(keys.PENDING, "d-1") is None


def test_finish_creates_the_staged_sessions_from_the_records_body(
    redis_client: redis.Redis,
) -> None:
    client = redis_client
    record(client)
    assert finish(client, sessions=(trigger_spec("s-1"), trigger_spec("s-2"))) == 1
    for sid in ("s-1", "s-2"):
        stored = cast(dict[bytes, bytes], client.hgetall(keys.session(sid)))
        assert stored[b"body"] == BODY
        assert (stored[b"event"], stored[b"deliveryId"]) == (b"issues", b"d-1")
        assert client.zscore(keys.SESSIONS, sid) == NOW + 5
        assert client.zscore(keys.agent_sessions("triage"), sid) == NOW + 5
    assert hash_of(client, keys.delivery("d-1"))["status"] == "processed"


def test_finish_writes_nothing_when_a_staged_session_exists(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    client.hset(keys.session("s-2"), "spec", "{}")
    assert finish(client, sessions=(trigger_spec("s-1"), trigger_spec("s-2"))) == 0
    assert client.exists(keys.session("s-1"), keys.SESSIONS) == 0
    assert "status" not in hash_of(client, keys.delivery("d-1"))
    assert client.zscore(keys.PENDING, "d-1") == NOW + 30


def test_finish_writes_nothing_when_the_body_is_gone(redis_client: redis.Redis) -> None:
    client = redis_client
    client.zadd(keys.PENDING, {"d-1": NOW})
    assert finish(client, sessions=(trigger_spec("s-1"),)) == 0
    assert client.exists(keys.session("s-1")) == 0
    assert client.zscore(keys.PENDING, "d-1") == NOW


def test_finish_call_refuses_a_session_of_another_delivery() -> None:
    with pytest.raises(ValueError, match="session s-9 was not spawned by delivery d-1"):
        finish_call(
            "d-1",
            status="processed",
            now=NOW,
            error="",
            run=b"{}",
            owner="",
            sessions=(trigger_spec("s-9", "d-2"),),
            session_retention=TTL,
        )


# DROP_SWEPT: the upkeep's walk over the sweep counts ------------------------------------


def test_drop_swept_keeps_only_the_counts_of_pending_deliveries(
    redis_client: redis.Redis,
) -> None:
    client = redis_client
    client.hset(keys.SWEPT, mapping={"pending": 3, "done": 2, "retrying": 1})
    client.zadd(keys.PENDING, {"pending": NOW, "retrying": NOW})
    cursor, dropped = run(client, scripts.DROP_SWEPT, [keys.SWEPT, keys.PENDING], [0, 100])
    assert (cursor, dropped) == (b"0", 1)
    assert client.hgetall(keys.SWEPT) == {b"pending": b"3", b"retrying": b"1"}


# RENEW and RELEASE ----------------------------------------------------------------------


def test_renew_extends_only_its_own_lock(redis_client: redis.Redis) -> None:
    client = redis_client
    lock = keys.delivery_lock("d-1")
    client.set(lock, "worker-a", px=1000)
    assert run(client, scripts.RENEW, [lock], ["worker-b", 60_000]) == 0
    assert client.pttl(lock) <= 1000
    assert run(client, scripts.RENEW, [lock], ["worker-a", 60_000]) == 1
    assert client.pttl(lock) > 1000
    client.delete(lock)
    assert run(client, scripts.RENEW, [lock], ["worker-a", 60_000]) == 0
    assert client.exists(lock) == 0


def test_release_drops_only_its_own_lock(redis_client: redis.Redis) -> None:
    client = redis_client
    lock = keys.delivery_lock("d-1")
    client.set(lock, "worker-a")
    assert run(client, scripts.RELEASE, [lock], ["worker-b"]) == 0
    assert client.get(lock) == b"worker-a"
    assert run(client, scripts.RELEASE, [lock], ["worker-a"]) == 1
    assert client.exists(lock) == 0


# CREATE: one session in the session store ---------------------------------------------------


def create(client: redis.Redis, sid: str, mode: str, source: bytes | str, record_key: str) -> int:
    session_keys = [keys.session(sid), keys.SESSIONS, keys.agent_sessions("triage"), record_key]
    return int(run(client, CREATE, session_keys, [sid, b'{"id":1}', NOW, mode, source, "d-1", TTL]))


def test_create_from_a_delivery_copies_its_body(redis_client: redis.Redis) -> None:
    client = redis_client
    record(client)
    assert create(client, "s-1", "delivery", "issues", keys.delivery("d-1")) == 1
    stored = cast(dict[bytes, bytes], client.hgetall(keys.session("s-1")))
    assert stored == {
        b"spec": b'{"id":1}',
        b"event": b"issues",
        b"deliveryId": b"d-1",
        b"body": BODY,
    }
    assert 0 < client.ttl(keys.session("s-1")) <= TTL
    assert client.zscore(keys.SESSIONS, "s-1") == NOW
    assert client.zscore(keys.agent_sessions("triage"), "s-1") == NOW


def test_create_from_a_delivery_that_is_gone(redis_client: redis.Redis) -> None:
    assert create(redis_client, "s-1", "delivery", "issues", keys.delivery("d-1")) == -1
    assert redis_client.exists(keys.session("s-1"), keys.SESSIONS) == 0


def test_create_inline_with_and_without_input(redis_client: redis.Redis) -> None:
    client = redis_client
    assert create(client, "s-1", "inline", b"packed", keys.session("s-1")) == 1
    assert client.hgetall(keys.session("s-1")) == {b"spec": b'{"id":1}', b"input": b"packed"}
    assert create(client, "s-2", "inline", b"", keys.session("s-2")) == 1
    assert client.hgetall(keys.session("s-2")) == {b"spec": b'{"id":1}'}
    assert client.zcard(keys.SESSIONS) == 2


def test_create_of_an_existing_session_writes_nothing(redis_client: redis.Redis) -> None:
    client = redis_client
    client.hset(keys.session("s-1"), "spec", "first")
    assert create(client, "s-1", "inline", b"packed", keys.session("s-1")) == 0
    assert client.hgetall(keys.session("s-1")) == {b"spec": b"first"}
    assert client.exists(keys.SESSIONS) == 0
