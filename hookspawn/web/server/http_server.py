"""How `hookspawn web` serves the app: uvicorn on two sockets (the admin API's and the
broker's, hookspawn/web/server/listeners.py), with the connection limits and proxy trust."""

from __future__ import annotations

import gc
import logging
import resource
import signal
import socket
from typing import Any

import uvicorn

from hookspawn.errors import CommandError
from hookspawn.web.server.limits import Limits, protocol
from workers.runtime import Runtime
from workers.settings import Settings

log = logging.getLogger(__name__)
uvicorn_log = logging.getLogger("uvicorn.error")

#: descriptors the process needs besides its client connections (Redis, logs, the listeners)
SPARE_DESCRIPTORS = 256
#: uvicorn's default
BACKLOG = 2048


def serve_web(rt: Runtime, *, host: str, port: int, broker_port: int, access_log: bool) -> None:
    """Serve the admin API on host:port and the broker alone on host:broker_port
    (hookspawn/web/server/listeners.py) until stopped, with every limit of
    `hookspawn.web.server.limits` in force on both."""
    from hookspawn.web.server.listeners import listening_app

    main, broker = listen(host, port), listen(host, broker_port)
    try:
        app = listening_app(rt, bound_host=host, main_port=main.getsockname()[1])
        config = web_config(app, rt.settings, host=host, port=port, access_log=access_log)
        settle_heap()
        TwoListeners(config).run(sockets=[main, broker])
    finally:
        main.close()
        broker.close()


class TwoListeners(uvicorn.Server):
    """uvicorn on the admin API's socket and the broker's: once serving, it says where each is
    (uvicorn says nothing of sockets it was handed)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if sockets and self.started:
            host, port = self.config.host, sockets[0].getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            # the line uvicorn writes for a socket it bound itself
            uvicorn_log.info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, port)
            log.info("%s", broker_line(host, sockets[1].getsockname()[1]))


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, bound as uvicorn binds its own (port 0: a free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise CommandError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}", exit_code=2
        ) from None
    sock.set_inheritable(True)
    return sock


def broker_line(host: str, port: int) -> str:
    """What `web` says of its broker listener."""
    shown = f"[{host}]" if ":" in host else host
    return (
        f"session broker on http://{shown}:{port} (the sessions' broker routes only: what "
        "their sandboxes may reach)"
    )


def settle_heap() -> None:
    """Move everything built at start (the app, its models, the imported libraries: some
    150,000 objects) out of the garbage collector's reach: they live as long as the process,
    and each full collection would otherwise walk them all again while serving.

    The stop signals wait while the collection runs: it runs finalizers and weakref
    callbacks, and an exception a signal handler raised inside one of those would be
    printed and dropped, the stop lost with it.
    """
    stops = {signal.SIGINT, signal.SIGTERM}
    held = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        gc.collect()
        gc.freeze()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def web_config(
    app: Any, settings: Settings, *, host: str, port: int, access_log: bool
) -> uvicorn.Config:
    """uvicorn's configuration for `app`, with every limit of `hookspawn.web.server.limits` (each
    process serving it has its own).

    X-Forwarded-Proto and X-Forwarded-For are believed only from HOOKSPAWN_TRUSTED_PROXIES
    (uvicorn would otherwise believe them from 127.0.0.1).
    """
    limits = Limits.from_settings(settings)
    _allow_descriptors(limits.max_connections + SPARE_DESCRIPTORS)
    trusted = list(settings.trusted_proxies)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        access_log=access_log,  # a line per webhook is for debugging, not for load
        http=protocol(limits),
        ws="none",  # nothing here speaks WebSocket: an upgrade would leave these limits behind
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
        server_header=False,
    )


def _allow_descriptors(wanted: int) -> None:
    """Raise the soft open-files limit toward `wanted` (never past the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        if target < wanted:
            log.warning(
                "open files limited to %d: fewer than HOOKSPAWN_MAX_CONNECTIONS needs (%d)",
                target,
                wanted,
            )
