"""`run_script`: the delivery scripts sent straight on a pool process's one connection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.conftest import command_calls
from workers.delivery.deliveries import run_script
from workers.redis_connection import redis_client

_INCR = "return redis.call('INCRBY', KEYS[1], ARGV[1])"


@pytest.fixture
def single(redis_url: str) -> Iterator[redis.Redis]:
    client = redis_client(redis_url, single_connection=True)
    try:
        yield client
    finally:
        client.close()


def test_answers_as_the_script_does_on_the_clients_one_connection(
    single: redis.Redis, redis_client: redis.Redis
) -> None:
    script = single.register_script(_INCR)
    assert script(keys=["n"], args=[2]) == 2  # loads it
    connection = single.connection
    assert connection is not None
    wrapped: list[object] = []
    execute = single.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        wrapped.append(args[0])
        return execute(*args, **options)  # type: ignore[no-untyped-call]

    single.execute_command = counted  # type: ignore[method-assign]
    assert run_script(single, script, ["n"], [3]) == 5
    assert run_script(single, script, ["n"], [4]) == 9
    assert wrapped == []  # not through the client's command wrapper
    assert single.connection is connection
    assert redis_client.get("n") == b"9"


def test_a_flushed_script_cache_is_loaded_again(
    single: redis.Redis, redis_client: redis.Redis
) -> None:
    script = single.register_script(_INCR)
    assert script(keys=["n"], args=[1]) == 1
    redis_client.script_flush()
    assert run_script(single, script, ["n"], [1]) == 2
    assert run_script(single, script, ["n"], [1]) == 3  # straight through again
    assert redis_client.get("n") == b"3"


def test_a_script_error_is_raised_and_the_next_call_works(single: redis.Redis) -> None:
    failing = single.register_script("return redis.call('INCRBY', KEYS[1], 'x')")
    script = single.register_script(_INCR)
    script(keys=["n"], args=[0])
    with pytest.raises(redis.ResponseError, match="not an integer"):
        run_script(single, failing, ["n"], [])
    assert run_script(single, script, ["n"], [5]) == 5


def test_a_dropped_connection_is_raised_once_not_retried_then_reconnected(
    single: redis.Redis, redis_client: redis.Redis
) -> None:
    script = single.register_script(_INCR)
    script(keys=["n"], args=[0])
    name = f"run-script-{id(single)}"
    single.client_setname(name)
    [victim] = [c for c in redis_client.client_list() if c.get("name") == name]
    redis_client.client_kill_filter(_id=victim["id"])
    before = command_calls(redis_client, "evalsha")
    with pytest.raises(redis.ConnectionError):
        run_script(single, script, ["n"], [1])
    # raised at once: the script was not sent again behind the caller's back
    assert command_calls(redis_client, "evalsha") == before
    assert run_script(single, script, ["n"], [1]) == 1
    assert redis_client.get("n") == b"1"


def test_a_pooled_client_goes_through_the_script(redis_client: redis.Redis) -> None:
    script = redis_client.register_script(_INCR)
    assert redis_client.connection is None
    assert run_script(redis_client, script, ["n"], [7]) == 7
    assert run_script(redis_client, script, ["n"], [1]) == 8
