"""How `hookspawn web` serves the app: uvicorn, with the connection limits and proxy trust."""

from __future__ import annotations

import gc
import logging
import resource
import signal
from typing import Any

import uvicorn

from hookspawn.web.direct_intake import DirectIntakeProtocol
from hookspawn.web.limits import Limits, protocol
from workers.settings import Settings

log = logging.getLogger(__name__)

#: descriptors the process needs besides its client connections (Redis, logs, the listener)
SPARE_DESCRIPTORS = 256


def serve_web(app: Any, settings: Settings, *, host: str, port: int, access_log: bool) -> None:
    """Serve `app` until stopped, with every limit of `hookspawn.web.limits` in force."""
    config = web_config(app, settings, host=host, port=port, access_log=access_log)
    settle_heap()
    uvicorn.Server(config).run()


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
    """uvicorn's configuration for `app`, with every limit of `hookspawn.web.limits` (each
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
        http=protocol(limits, DirectIntakeProtocol),
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
