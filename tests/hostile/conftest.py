"""Shared pieces of the hostile-input suite: the error-body shape and a store snapshot."""

from __future__ import annotations

from typing import Any

import httpx
import redis

from tests.intake.test_receiver import snapshot
from workers import keys

#: what SPEC §10 lets POST /webhooks/github answer, and the error code each refusal carries
INTAKE_CODES: dict[int, set[str]] = {
    400: {"invalid_header", "invalid_body"},
    401: {"invalid_signature"},
    413: {"payload_too_large"},
    415: {"unsupported_content_type"},
    503: {"store_unavailable"},
}


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The `error` object of a refusal, after checking the shared shape exactly."""
    assert response.headers.get("content-type", "").startswith("application/json"), response.text
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict) and set(error) == {"code", "message", "details"}, error
    assert isinstance(error["code"], str) and error["code"], error
    assert isinstance(error["message"], str) and error["message"].strip(), error
    assert isinstance(error["details"], dict), error
    return error


#: the metrics hash: counters summed across processes, flushed on a timer; a refused
#: request is counted there on purpose, so it is not part of "changes nothing"
METRICS_KEY = f"{keys.PREFIX}:metrics".encode()


def store_state(client: redis.Redis) -> dict[bytes, object]:
    """Every key (see tests/intake's `snapshot`) but the metrics counters."""
    return {key: value for key, value in snapshot(client).items() if key != METRICS_KEY}


def hookspawn_state(client: redis.Redis) -> dict[bytes, object]:
    """hookspawn's own keys and its Celery queue, leaving out Celery's bookkeeping.

    With a worker running, kombu's own keys (unacked index, mutexes, bindings) change on
    their own; everything hookspawn records lives under `hookspawn:` or is the queue itself.
    """
    prefix = keys.PREFIX.encode()
    return {
        key: value
        for key, value in store_state(client).items()
        if key == prefix or key.startswith(prefix + b":")
    }
