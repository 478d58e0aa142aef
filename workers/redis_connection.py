"""The one way hookspawn opens a Redis client: bounded timeouts, no retry on a timeout.

The store is either a URL (`HOOKSPAWN_REDIS_URL`) or a primary that Redis Sentinel
watches (`HOOKSPAWN_REDIS_SENTINELS` with `HOOKSPAWN_REDIS_SENTINEL_MASTER`): every
connection to it then asks the sentinels where the primary is, so a client follows a
failover by connecting again (redis-py's `SentinelConnectionPool`; a primary demoted to a
replica answers a write READONLY, which drops the connection the same way).

`ReplicaAck` is how many replicas must hold a write before it counts as done
(`HOOKSPAWN_REDIS_MIN_REPLICAS_ACK`): the write is followed on its own connection by
`WAIT replicas timeout`, and a shortfall raises `StoreNotReplicated`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import redis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.commands.core import Script
from redis.sentinel import SentinelConnectionPool, SentinelManagedConnection

from workers.redis_target import RedisTarget, ReplicaAck, Sentinels

__all__ = [
    "async_redis_client",
    "broker_options",
    "broker_url",
    "close_channels_without_their_connection_in_kombu",
    "follow_failovers_in_kombu",
    "redis_client",
    "run_replicated",
    "sentinel_client",
]


def describe(target: RedisTarget) -> str:
    """The target for a message (a URL without its password)."""
    if isinstance(target, Sentinels):
        return f"the Redis primary {target.describe()}"
    params = redis.connection.parse_url(target)  # type: ignore[no-untyped-call]
    where = params.get("path") or f"{params.get('host', 'localhost')}:{params.get('port', 6379)}"
    return f"Redis at {where}"


_CLIENT_OPTIONS: dict[str, Any] = {
    "socket_timeout": 5,
    "socket_connect_timeout": 2,
    "health_check_interval": 30,
    "retry_on_timeout": False,
}


def redis_client(target: RedisTarget, *, single_connection: bool = False) -> redis.Redis:
    """`single_connection`: commands share one connection (under the client's lock) instead
    of taking one from the pool and giving it back each time; pipelines still use the pool.
    With `Sentinels`, each connection is made to the primary the sentinels name then."""
    if isinstance(target, Sentinels):
        return sentinel_client(target, single_connection=single_connection)
    return redis.Redis.from_url(
        target, **_CLIENT_OPTIONS, single_connection_client=single_connection
    )


class _PrimaryConnection(SentinelManagedConnection):
    """A connection that asks the sentinels where the primary is whenever it connects again.

    redis-py (8.1) connects a dropped connection again from `send_packed_command` at the
    address it had, not through the sentinel-aware `connect`: the one connection of a
    single-connection client would go back to a demoted primary after every READONLY."""

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self._sock is None:
            self.connect()  # type: ignore[no-untyped-call]
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]


def follow_failovers_in_kombu() -> None:
    """Make kombu's Sentinel transport (Celery's broker connections) connect through
    `_PrimaryConnection` too.

    kombu opens them with redis-py's SentinelManagedConnection, which after a drop connects
    again at the address it had: a consumer whose connection dropped after a failover went
    back to the demoted primary, was answered READONLY, dropped it and went back again, for
    as long as the worker ran, taking no task while deliveries waited. This sets kombu's
    `SentinelChannel.connection_class`, an internal of kombu's (this module is the one place
    hookspawn reaches into kombu, pinned to the minor version tested: the broker tests of
    tests/workers/test_sentinel_store.py).
    """
    from kombu.transport import redis as kombu_redis

    kombu_redis.SentinelChannel.connection_class = _PrimaryConnection


def close_channels_without_their_connection_in_kombu() -> None:
    """Let a kombu Redis channel left open by an interrupted teardown close without crashing
    the worker.

    When Celery's consumer loses the broker it first collects its connection, which closes
    the connection's channels and then drops the transport. With Redis gone, a channel can
    stay open: its close first reads the BRPOP in flight, which fails, and the transport's
    closing of its channels stops at the first that fails (the remote control's, deleting its
    queue). Celery then closes the connection again, and that channel, holding a delivery
    not yet acknowledged (acks late), tries to put it back through the dropped transport:
    kombu 5.7 raises AttributeError there, which Celery takes as unrecoverable, and the worker
    stops instead of connecting again (seen at a Sentinel failover under load).

    This makes kombu's `Channel._connparams`, another internal of kombu's, raise a
    ConnectionError when the channel's transport is gone: the close ends as a connection
    error, Celery connects again, and the delivery stays in kombu's unacknowledged index,
    restored after its visibility timeout (and hookspawn's sweep enqueues it again once its
    lease runs out). Checked against the pinned kombu by tests/workers/test_kombu_teardown.py.
    """
    from kombu.transport import redis as kombu_redis

    connparams: Any = kombu_redis.Channel._connparams
    if getattr(connparams, "hookspawn_guard", False):
        return

    @functools.wraps(connparams)
    def guarded(self: Any, asynchronous: bool = False) -> Any:
        if getattr(self.connection, "client", None) is None:
            raise redis.ConnectionError(
                "the broker connection this channel was opened on is closed"
            )
        return connparams(self, asynchronous)

    guarded.hookspawn_guard = True  # type: ignore[attr-defined]
    kombu_redis.Channel._connparams = guarded  # type: ignore[method-assign]


def sentinel_client(target: Sentinels, *, single_connection: bool = False) -> redis.Redis:
    """A client of the primary `target`'s sentinels name, found again on every connect."""
    pool = SentinelConnectionPool(  # type: ignore[no-untyped-call]
        target.master,
        target.sentinel(),
        password=target.password,
        connection_class=_PrimaryConnection,
        **_CLIENT_OPTIONS,
    )
    client = redis.Redis(connection_pool=pool, single_connection_client=single_connection)
    client.auto_close_connection_pool = True  # the client owns its pool, as from_url's does
    return client


def async_redis_client(target: RedisTarget) -> aioredis.Redis:
    """An asyncio client of `target` (the primary its sentinels name, on each connect)."""
    options: dict[str, Any] = {"socket_timeout": 5, "socket_connect_timeout": 2}
    if not isinstance(target, Sentinels):
        return aioredis.Redis.from_url(target, **options)
    sentinel = AsyncSentinel(  # type: ignore[no-untyped-call]
        list(target.addresses), sentinel_kwargs=target.sentinel_options()
    )
    client: aioredis.Redis = sentinel.master_for(target.master, password=target.password, **options)
    return client


def broker_url(target: RedisTarget) -> str:
    """Celery's broker URL for `target`: the URL itself, or kombu's `sentinel://` transport
    with one URL a sentinel (the primary's password in each, as kombu reads it)."""
    if not isinstance(target, Sentinels):
        return target
    auth = f":{quote(target.password, safe='')}@" if target.password else ""
    hosts = [(f"[{host}]" if ":" in host else host, port) for host, port in target.addresses]
    return ";".join(f"sentinel://{auth}{host}:{port}/0" for host, port in hosts)


def broker_options(target: RedisTarget) -> dict[str, Any]:
    """kombu's transport options `target` adds: the primary's name and how the sentinels
    are asked (their password)."""
    if not isinstance(target, Sentinels):
        return {}
    sentinel = target.sentinel_options()
    if not target.sentinel_password:
        del sentinel["password"]
    return {"master_name": target.master, "sentinel_kwargs": sentinel}


def run_replicated(
    client: redis.Redis,
    script: Script,
    keys_: Sequence[str],
    args: Sequence[Any],
    ack: ReplicaAck,
    what: str,
) -> Any:
    """The script's answer, once `ack.replicas` replicas hold what it wrote: the script and
    `WAIT` go out together on one connection (WAIT counts that connection's writes).

    Raises StoreNotReplicated (the write stands on the primary) when too few acknowledged.
    On a single-connection client they are sent straight on its connection; otherwise (or
    after a NOSCRIPT, which loads the script first) in a pipeline of the client's pool.
    """
    conn = client.connection
    if conn is not None:
        with client.single_connection_lock:
            try:
                conn.send_packed_command(  # type: ignore[no-untyped-call]
                    conn.pack_commands(  # type: ignore[no-untyped-call]
                        [
                            ("EVALSHA", script.sha, len(keys_), *keys_, *args),
                            ("WAIT", ack.replicas, ack.timeout_ms),
                        ]
                    )
                )
                try:
                    answer = conn.read_response()
                except redis.exceptions.NoScriptError:
                    conn.read_response()  # WAIT's, for nothing written
                    answer = None
                    loaded = False
                else:
                    loaded = True
                acknowledged = conn.read_response() if loaded else 0
            except BaseException:
                conn.disconnect()  # type: ignore[no-untyped-call]
                raise
        if loaded:
            ack.check(int(acknowledged), what)
            return answer
    pipe = client.pipeline(transaction=False)
    script(keys=keys_, args=args, client=pipe)
    pipe.execute_command("WAIT", ack.replicas, ack.timeout_ms)  # type: ignore[no-untyped-call]
    answer, acknowledged = pipe.execute()
    ack.check(int(acknowledged), what)
    return answer
