"""Fixtures for the connections tests: real webhook payloads, a store on the real Redis."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import redis

from workers.github.connections import ConnectionStore

Payload = Callable[[str], dict[str, Any]]


@cache
def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def payload(webhooks_dir: Path) -> Payload:
    """`payload("installation/created")` → a fresh copy of that recorded webhook body."""

    def load(name: str) -> dict[str, Any]:
        return copy.deepcopy(_read(webhooks_dir / f"{name}.payload.json"))

    return load


@pytest.fixture
def client(redis_client: redis.Redis) -> redis.Redis:
    return redis_client


@pytest.fixture
def store(client: redis.Redis) -> ConnectionStore:
    return ConnectionStore(client)
