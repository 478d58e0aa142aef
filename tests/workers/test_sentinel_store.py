"""The store through Redis Sentinel, and writes acknowledged by replicas (WAIT), against a real
primary, replica and sentinel (passwords on both); a failover forced with SENTINEL FAILOVER."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from tests.conftest import wait_for
from tests.redis_sentinels import MASTER, SentinelGroup
from tests.suite_marks import marks_tests
from tests.workers.delivery.test_record_pipe import new
from workers import keys
from workers.celery_app import make_celery
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record_pipe import RecordPipe
from workers.delivery.scripts import RECORD
from workers.errors import StoreNotReplicated
from workers.redis_connection import redis_client
from workers.redis_target import ReplicaAck

QUEUE = "sentinel-test-queue"


@pytest.fixture(scope="module")
@marks_tests("slow", "stack")
def group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelGroup]:
    root: Path = tmp_path_factory.mktemp("sentinels")
    with SentinelGroup(
        root, sentinels=1, password="primary pass", sentinel_password="sentinel pass"
    ) as made:
        yield made


@pytest.fixture
def primary(group: SentinelGroup) -> Iterator[redis.Redis]:
    client = group.primary().client()
    client.flushall()
    group.wait_replicas(1)
    # the replica has applied the flush too: a test's failover promotes it, and what an earlier
    # test left there would otherwise come back (replication does not wait on its own)
    assert client.wait(1, 10_000) >= 1
    try:
        yield client
    finally:
        client.close()


def replica_holds(group: SentinelGroup, key: str) -> bool:
    primary = group.primary_port()
    replica = next(node for node in group.data if node.port != primary)
    client = replica.client()
    try:
        return bool(client.exists(key))
    finally:
        client.close()


def forced_failover(group: SentinelGroup) -> int:
    """SENTINEL FAILOVER, and the new primary's port once the old one is its replica: until
    then the old one, left running by a forced failover, takes writes of its own, so none are
    sent before that."""
    old = group.primary_port()
    sentinel = group.sentinels[0].client()
    try:
        assert sentinel.sentinel_failover(MASTER)
    finally:
        sentinel.close()
    new_port = group.wait_failover(old)
    group.wait_replicas(1)
    return new_port


def test_the_store_reaches_the_primary_the_sentinel_names(
    group: SentinelGroup, primary: redis.Redis
) -> None:
    client = redis_client(group.target, single_connection=True)
    try:
        store = DeliveryStore(client, retention=timedelta(days=1), ack=ReplicaAck(1, 2000))
        assert store.record(new("d-1"), queue=QUEUE, message=b"m") is True
        assert store.record(new("d-1"), queue=QUEUE, message=b"m") is False
    finally:
        client.close()
    assert primary.exists(keys.delivery("d-1"))
    # acknowledged by the replica before record() answered
    assert replica_holds(group, keys.delivery("d-1"))


def test_too_few_replicas_is_not_replicated_yet_the_write_stands_on_the_primary(
    group: SentinelGroup, primary: redis.Redis
) -> None:
    client = redis_client(group.target)  # a pooled client: script and WAIT in one pipeline
    try:
        store = DeliveryStore(client, retention=timedelta(days=1), ack=ReplicaAck(2, 30))
        with pytest.raises(StoreNotReplicated) as raised:
            store.record(new("d-2"), queue=QUEUE, message=b"m")
    finally:
        client.close()
    assert raised.value.code == "store_not_replicated"
    assert "only 1 of the 2 replicas" in raised.value.message
    assert "d-2" in raised.value.message
    assert primary.exists(keys.delivery("d-2"))


def test_the_record_pipe_answers_once_replicas_hold_the_record(
    group: SentinelGroup, primary: redis.Redis
) -> None:
    store = DeliveryStore(primary, retention=timedelta(days=1))

    async def main() -> tuple[list[object], BaseException | None]:
        pipe = RecordPipe(group.target, RECORD, ack=ReplicaAck(1, 2000))
        short = RecordPipe(group.target, RECORD, ack=ReplicaAck(2, 30))
        try:
            calls = [store.record_call(new(f"p-{n}"), queue=QUEUE, message=b"m") for n in range(20)]
            answers = await asyncio.gather(*(pipe.call(k, a) for k, a in calls))
            failed: BaseException | None = None
            try:
                await short.call(*store.record_call(new("p-short"), queue=QUEUE, message=b"m"))
            except StoreNotReplicated as exc:
                failed = exc
            return list(answers), failed
        finally:
            pipe.close()
            short.close()

    answers, failed = asyncio.run(main())
    assert answers == [1] * 20
    assert all(replica_holds(group, keys.delivery(f"p-{n}")) for n in range(20))
    assert isinstance(failed, StoreNotReplicated)
    assert primary.exists(keys.delivery("p-short"))  # recorded; answered as not replicated


# kombu's sentinel transport asks the sentinels through a Sentinel client it never closes;
# its socket is left to the garbage collector (an unclosed-socket ResourceWarning)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_celery_reaches_the_primary_through_kombus_sentinel_transport(
    group: SentinelGroup, primary: redis.Redis
) -> None:
    app = make_celery(group.target)
    try:
        app.send_task("hookspawn.noop", args=["x"], queue=QUEUE)
    finally:
        app.close()
    assert primary.llen(QUEUE) == 1


def test_clients_follow_a_failover_and_load_their_scripts_on_the_new_primary(
    group: SentinelGroup, primary: redis.Redis
) -> None:
    single = redis_client(group.target, single_connection=True)
    store = DeliveryStore(single, retention=timedelta(days=1))
    loop = asyncio.new_event_loop()
    pipe = RecordPipe(group.target, RECORD)
    try:
        assert store.record(new("f-before"), queue=QUEUE, message=b"m")
        call = store.record_call(new("f-pipe-before"), queue=QUEUE, message=b"m")
        assert loop.run_until_complete(pipe.call(*call)) == 1
        new_port = forced_failover(group)
        fresh = group.node_at(new_port).client()
        try:
            fresh.script_flush()  # a primary that never ran the scripts: NOSCRIPT first
        finally:
            fresh.close()

        def recorded(delivery_id: str) -> bool:
            try:
                return bool(store.record(new(delivery_id), queue=QUEUE, message=b"m"))
            except redis.ConnectionError:
                return False  # the connection to the demoted primary, dropped

        def piped(delivery_id: str) -> bool:
            call = store.record_call(new(delivery_id), queue=QUEUE, message=b"m")
            try:
                return bool(loop.run_until_complete(pipe.call(*call)) == 1)
            except redis.ConnectionError:
                return False

        wait_for(lambda: recorded("f-after"), 30.0, 0.1, what="a record on the new primary")
        wait_for(lambda: piped("f-pipe-after"), 30.0, 0.1, what="a piped record there")
        fresh = group.node_at(new_port).client()
        try:
            for delivery_id in ("f-before", "f-pipe-before", "f-after", "f-pipe-after"):
                assert fresh.exists(keys.delivery(delivery_id)), delivery_id
            assert fresh.script_exists(pipe.sha.decode()) == [True]
        finally:
            fresh.close()
    finally:
        pipe.close()
        loop.run_until_complete(asyncio.sleep(0))  # the closed transport lets go of its socket
        loop.close()
        single.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_broker_connection_dropped_after_a_failover_connects_to_the_new_primary(
    group: SentinelGroup, primary: redis.Redis
) -> None:
    """Celery's broker connections (kombu's Sentinel transport) ask the sentinels again when
    they connect again: redis-py's own class went back to the demoted primary, every time."""
    app = make_celery(group.target)
    try:
        with app.connection_for_write() as connection:
            pool = connection.default_channel.client.connection_pool
            conn = pool.get_connection()
            conn.send_command("PING")
            assert conn.read_response() == b"PONG"
            assert conn.port == group.primary_port()
            new_port = forced_failover(group)  # the old primary, now a replica, still answers
            conn.disconnect()  # as a consumer's connection is dropped by the failover
            answers = []
            for _ in range(3):
                try:
                    conn.send_command("LPUSH", QUEUE, "after")
                    answers.append((conn.port, conn.read_response()))
                except redis.ConnectionError as exc:
                    answers.append((conn.port, str(exc)))
            pool.release(conn)
    finally:
        app.close()
    assert answers == [(new_port, 1), (new_port, 2), (new_port, 3)], answers
