"""Shared fixtures: a real redis-server for the session, a clean database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from workers.redis_server import RedisServer

WEBHOOKS = Path(__file__).resolve().parents[1].parent / "shared" / "github-webhooks"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """A flushed database on the session's server."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    yield redis_server.url


@pytest.fixture(scope="session")
def webhooks_dir() -> Path:
    if not WEBHOOKS.is_dir():
        pytest.fail(f"webhook examples not found at {WEBHOOKS}")
    return WEBHOOKS
