"""Shared pieces of the hostile-input suite: the error-body shape, a store snapshot, and a
real `hookspawn web` to attack."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis

from hookspawn.serve.redis_server import free_port
from tests import loopback
from tests.conftest import SECRET, webhook_headers
from tests.hookspawn.web.intake.test_receiver import snapshot
from tests.procs import HOOKSPAWN, Proc, environment, launch, wait_answering
from workers import keys

#: what POST /webhooks/github may answer, and the error code each refusal carries
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
    """Every key (see tests/triggers/intake's `snapshot`) but the metrics counters."""
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


# -- a real `hookspawn web` subprocess ----------------------------------------------------------

ADMIN_TOKEN = "hostile-web-admin-token"


@contextmanager
def web_process(root: Path, redis_url: str, **env: str) -> Iterator[tuple[Proc, str]]:
    """`hookspawn web` on a free loopback port with `HOOKSPAWN_*` from `env` (names without
    the prefix, e.g. `BODY_TIMEOUT="5s"`); yields the process and its base URL."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    port = free_port()
    settings = {
        "HOOKSPAWN_REDIS_URL": redis_url,
        "HOOKSPAWN_WEBHOOK_SECRET": SECRET,
        "HOOKSPAWN_ADMIN_TOKEN": ADMIN_TOKEN,
        "HOOKSPAWN_AGENTS_DIR": str(root / ".auto"),
        "HOOKSPAWN_DATA_DIR": str(root / "data"),
        "TMPDIR": str(root / "tmp"),  # where a spooled upload would land
        **{f"HOOKSPAWN_{name}": value for name, value in env.items()},
    }
    argv = [
        *HOOKSPAWN,
        "web",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--broker-port",
        str(free_port()),
    ]
    proc = launch("web", argv, env=environment(settings), log=root / "web.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answering(proc, url, 60)
        yield proc, url
    finally:
        proc.stop()


def signed_delivery(url: str, body: bytes) -> tuple[int, float]:
    """POST a signed delivery on a fresh connection: its status and how long the answer took."""
    headers = webhook_headers(body, "issues", f"d-{uuid.uuid4().hex[:16]}")
    started = time.monotonic()
    with loopback.Client(timeout=30) as client:
        status = client.post(f"{url}/webhooks/github", content=body, headers=headers).status_code
    return status, time.monotonic() - started
