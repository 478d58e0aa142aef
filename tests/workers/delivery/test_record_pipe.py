"""Intake's group-committed record scripts, against a real redis-server."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from hookspawn.serve.redis_server import RedisServer
from workers import keys
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import NewDelivery
from workers.delivery.record_pipe import RecordPipe, RecordPipeError, encode_command, supports
from workers.delivery.scripts import RECORD, Arg

QUEUE = "hookspawn-test-queue"


def new(delivery_id: str) -> NewDelivery:
    return NewDelivery(
        delivery_id=delivery_id,
        event="pull_request",
        action="opened",
        repository="octo/widgets",
        installation_id=7,
        hook_id="42",
        body=b'{"action":"opened","number":%d}' % len(delivery_id),
    )


def call_of(store: DeliveryStore, delivery_id: str) -> tuple[list[str], list[Arg]]:
    keys_, args = store.record_call(
        new(delivery_id), queue=QUEUE, message=b"m-" + delivery_id.encode()
    )
    return keys_, args


@pytest.fixture
def store(redis_client: redis.Redis) -> DeliveryStore:
    return DeliveryStore(redis_client, retention=timedelta(days=1))


def reads_processed(client: redis.Redis) -> int:
    return int(client.info("stats")["total_reads_processed"])


def test_concurrent_calls_each_get_their_own_answer_from_few_writes(
    redis_url: str, redis_client: redis.Redis, store: DeliveryStore
) -> None:
    ids = [f"d-{i:03d}" for i in range(200)]

    async def main() -> list[object]:
        pipe = RecordPipe(redis_url, RECORD)
        try:
            await pipe.call(*call_of(store, "warm"))  # connected
            before = reads_processed(redis_client)
            calls = [pipe.call(*call_of(store, i)) for i in ids]
            calls += [pipe.call(*call_of(store, ids[0]))]  # a duplicate in the same pass
            answers = await asyncio.gather(*calls)
            reads = reads_processed(redis_client) - before
            assert reads < len(ids) / 10, f"{reads} reads for {len(ids)} calls: not grouped"
            return answers
        finally:
            pipe.close()

    answers = asyncio.run(main())
    assert answers == [1] * len(ids) + [0]
    assert redis_client.llen(QUEUE) == len(ids) + 1  # the warm-up's too
    assert redis_client.hget(keys.delivery("d-123"), "event") == b"pull_request"
    assert redis_client.zscore(keys.PENDING, "d-199") is not None


def test_a_lost_script_cache_is_refilled_and_the_call_answered(
    redis_url: str, redis_client: redis.Redis, store: DeliveryStore
) -> None:
    async def main() -> tuple[object, object]:
        pipe = RecordPipe(redis_url, RECORD)
        try:
            first = await pipe.call(*call_of(store, "before-flush"))
            redis_client.script_flush()
            return first, await pipe.call(*call_of(store, "after-flush"))
        finally:
            pipe.close()

    assert asyncio.run(main()) == (1, 1)
    assert redis_client.exists(keys.delivery("after-flush"))
    assert redis_client.script_exists(RecordPipe(redis_url, RECORD).sha.decode()) == [True]


def test_a_database_and_a_password_in_the_url_are_used(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", password="s3cret pass").start()
    try:
        url = server.url.rsplit("/", 1)[0] + "/3"
        client = redis.Redis.from_url(url)
        store = DeliveryStore(client, retention=timedelta(days=1))

        async def main() -> object:
            pipe = RecordPipe(url, RECORD)
            try:
                return await pipe.call(*call_of(store, "in-db-3"))
            finally:
                pipe.close()

        assert asyncio.run(main()) == 1
        assert client.exists(keys.delivery("in-db-3"))
        assert not redis.Redis.from_url(server.url).exists(keys.delivery("in-db-3"))

        async def wrong_password() -> object:
            pipe = RecordPipe(url.replace("s3cret pass", "wrong"), RECORD)
            try:
                return await pipe.call(*call_of(store, "refused"))
            finally:
                pipe.close()

        with pytest.raises(RecordPipeError, match="refused the connection"):
            asyncio.run(wrong_password())
        client.close()
    finally:
        server.stop()


def test_an_unreachable_store_fails_the_call_and_the_next_call_connects_again(
    tmp_path: Path,
) -> None:
    server = RedisServer(tmp_path / "redis")
    url = server.url
    store = DeliveryStore(redis.Redis.from_url(url), retention=timedelta(days=1))

    async def main() -> object:
        pipe = RecordPipe(url, RECORD, connect_timeout=1.0)
        try:
            with pytest.raises(RecordPipeError, match="cannot connect"):
                await pipe.call(*call_of(store, "while-down"))
            server.start()
            answer = await pipe.call(*call_of(store, "once-up"))
            server.stop()
            with pytest.raises(RecordPipeError):
                await pipe.call(*call_of(store, "stopped-again"))
            return answer
        finally:
            pipe.close()

    try:
        assert asyncio.run(main()) == 1
    finally:
        server.stop()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts and reads, and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        listener.close()


def test_a_store_that_does_not_answer_fails_within_the_timeout(silent_server: str) -> None:
    async def main() -> None:
        pipe = RecordPipe(silent_server, RECORD, timeout=0.3)
        try:
            await pipe.call(["k"], ["a"])
        finally:
            pipe.close()

    with pytest.raises(RecordPipeError, match=r"did not answer within 0.3s"):
        asyncio.run(asyncio.wait_for(main(), 10))


def test_commands_are_encoded_as_redis_reads_them(redis_client: redis.Redis) -> None:
    encoded = encode_command("SET", "k", b"v\r\nw", 1.5)
    assert encoded == b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\nv\r\nw\r\n$3\r\n1.5\r\n"


def test_tls_urls_are_left_to_redis_py() -> None:
    assert supports("redis://127.0.0.1:6379/0")
    assert supports("unix:///run/redis.sock?db=2")
    assert not supports("rediss://127.0.0.1:6380/0")
    with pytest.raises(ValueError, match="TLS"):
        RecordPipe("rediss://127.0.0.1:6380/0", RECORD)


def test_a_connection_lost_with_calls_in_flight_fails_each_of_them(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis").start()
    store = DeliveryStore(redis.Redis.from_url(server.url), retention=timedelta(days=1))
    got: list[object] = []

    async def main() -> None:
        pipe = RecordPipe(server.url, RECORD, timeout=0.5)
        try:
            await pipe.call(*call_of(store, "warm"))
            assert server.process is not None
            server.process.send_signal(signal.SIGSTOP)  # never answers what comes next
            try:
                calls = [pipe.call(*call_of(store, name)) for name in ("l-0", "l-1")]
                got.extend(await asyncio.gather(*calls, return_exceptions=True))
            finally:
                server.process.send_signal(signal.SIGCONT)
        finally:
            pipe.close()

    try:
        asyncio.run(main())
    finally:
        server.stop()
    assert [type(error) for error in got] == [RecordPipeError, RecordPipeError]
    assert all("did not answer within 0.5s" in str(error) for error in got)
