"""Serve an ASGI app over real HTTP (uvicorn on 127.0.0.1) for the duration of a test: one
app on one port, or the whole web (admin API and broker listener) as `hookspawn web` serves it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from hookspawn.serve.redis_server import free_port
from hookspawn.web.server.http_server import listen, web_config
from hookspawn.web.server.listeners import listening_app
from tests import loopback
from tests.conftest import wait_for
from workers.runtime import Runtime


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
    with live_server(app, port) as url, loopback.Client(base_url=url, timeout=30) as client:
        yield client


@dataclass(frozen=True)
class Listening:
    """Where `live_listeners` serves: the admin API's base URL and the broker listener's."""

    admin: str
    broker: str


@contextmanager
def live_listeners(
    rt: Runtime, port: int | None = None, broker_port: int | None = None
) -> Iterator[Listening]:
    """The app as `hookspawn web` serves it: uvicorn in a thread on two sockets of
    127.0.0.1, the admin API's and the broker's (hookspawn/web/server/listeners.py), with the
    connection limits of `rt.settings`; `port`, `broker_port`: chosen beforehand (for settings
    that must name them), else free ones."""
    main, broker = listen("127.0.0.1", port or 0), listen("127.0.0.1", broker_port or 0)
    app = listening_app(rt, bound_host="127.0.0.1", main_port=main.getsockname()[1])
    config = web_config(
        app, rt.settings, host="127.0.0.1", port=main.getsockname()[1], access_log=False
    )
    config.log_level = "warning"
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [main, broker]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), 10, 0.01, what="uvicorn started")
        if not server.started:
            raise RuntimeError("uvicorn exited before it started serving")
        yield Listening(
            admin=f"http://127.0.0.1:{main.getsockname()[1]}",
            broker=f"http://127.0.0.1:{broker.getsockname()[1]}",
        )
    finally:
        server.should_exit = True
        thread.join(10)
        main.close()
        broker.close()
