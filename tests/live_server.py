"""Serve an ASGI app over real HTTP (uvicorn on 127.0.0.1) for the duration of a test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from hookspawn.redis_server import free_port
from tests.conftest import wait_for


@contextmanager
def live_server(app: Any, port: int | None = None) -> Iterator[str]:
    """Yields the base URL (http://127.0.0.1:PORT) while uvicorn serves `app` in a thread;
    `port`: one chosen beforehand (for settings that must name the server's own URL)."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started or not thread.is_alive(), 10, 0.01, what="uvicorn started")
    if not server.started:
        raise RuntimeError("uvicorn exited before it started serving")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def live_client(app: Any, port: int | None = None) -> Iterator[httpx.Client]:
    with live_server(app, port) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client
