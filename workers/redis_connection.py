"""The one way hookspawn opens a Redis client: bounded timeouts, no retry on a timeout."""

from __future__ import annotations

import redis

__all__ = ["redis_client"]


def redis_client(url: str, *, single_connection: bool = False) -> redis.Redis:
    """`single_connection`: commands share one connection (under the client's lock) instead
    of taking one from the pool and giving it back each time; pipelines still use the pool."""
    return redis.Redis.from_url(
        url,
        socket_timeout=5,
        socket_connect_timeout=2,
        health_check_interval=30,
        retry_on_timeout=False,
        single_connection_client=single_connection,
    )
