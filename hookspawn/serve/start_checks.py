"""What `serve`, `web` and `worker` check before they print or start anything: each problem is
one line (a CommandError), never a banner followed by a traceback."""

from __future__ import annotations

import errno
import socket

from hookspawn.errors import CommandError
from workers.settings import Settings

__all__ = ["broker_port", "require_port", "require_redis"]


def broker_port(settings: Settings, port: int, given: int | None) -> int:
    """The broker listener's port: --broker-port, else HOOKSPAWN_BROKER_PORT, else the one
    after `port` (0 with port 0: a free one); never `port` itself."""
    chosen = given if given is not None else settings.broker_port
    if chosen is None:
        chosen = port + 1 if port else 0
    if chosen and chosen == port:
        raise CommandError(
            f"the broker listener cannot share port {port} with the admin API (the broker's "
            "port is reachable from session sandboxes): give it another with --broker-port or "
            "HOOKSPAWN_BROKER_PORT",
            exit_code=2,
        )
    if not 0 <= chosen <= 65535:
        raise CommandError(f"--broker-port {chosen}: not a port (0 to 65535)", exit_code=2)
    return chosen


def require_port(host: str, port: int, flag: str = "--port") -> None:
    """Refuse a port this host cannot listen on (in use, or not an address of this machine)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # as uvicorn binds: a port left in TIME_WAIT by an earlier server is free
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(
                    f"port {port} on {host} is in use (another hookspawn? choose one with {flag})",
                    exit_code=2,
                ) from None
            raise CommandError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}", exit_code=2
            ) from None


def require_redis(settings: Settings, verb: str) -> None:
    if settings.redis_target is None:
        raise CommandError(
            f"set HOOKSPAWN_REDIS_URL to the Redis deliveries are kept in, or "
            f"HOOKSPAWN_REDIS_SENTINELS and HOOKSPAWN_REDIS_SENTINEL_MASTER to find its "
            f"primary through Redis Sentinel (`hookspawn serve` "
            f"starts its own; `{verb}` runs beside one)",
            exit_code=2,
        )
