"""Whether git failed because a host could not be reached, not because it refused a credential.

git's own words come first (`Could not resolve host`, `Failed to connect`, a proxy's `CONNECT
tunnel failed`); where they say nothing of the network (a plain-HTTP request the sandbox's
proxy answers itself reads like any other HTTP error), the runner tries the host's port itself.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Destination", "destination_of", "probe", "unreachable", "unreachable_message"]

#: how long the runner's own try at a host's port may take
PROBE_TIMEOUT = 3.0

_WORDS = (
    (re.compile(r"Could not resolve (?:host|proxy): *(\S+)", re.I), "the name does not resolve"),
    (re.compile(r"Name or service not known|Temporary failure in name resolution", re.I),
     "the name does not resolve"),
    (re.compile(r"CONNECT tunnel failed, response (40[0-9])", re.I),
     "the sandbox's proxy refused it (HTTP {0})"),
    (re.compile(r"CONNECT tunnel failed, response (5[0-9][0-9])", re.I),
     "the sandbox's proxy could not connect to it (HTTP {0})"),
    (re.compile(r"Failed to connect to .*?: *Connection refused|Connection refused", re.I),
     "the connection was refused"),
    (re.compile(r"Failed to connect to|Couldn't connect to server|Network is unreachable"
                r"|Connection timed out|No route to host", re.I),
     "the connection could not be made"),
)  # fmt: skip


@dataclass(frozen=True)
class Destination:
    """The host and port git talks to for a URL."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def destination_of(url: str) -> Destination | None:
    """The host and port of an http(s), ssh or scp-like (`git@host:path`) git URL; None for a
    local one (`file://`, a path)."""
    if "://" in url:
        parts = urlsplit(url)
        defaults = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
        if parts.scheme not in defaults or not parts.hostname:
            return None
        try:
            port = parts.port or defaults[parts.scheme]
        except ValueError:
            return None
        return Destination(parts.hostname, port)
    scp = re.fullmatch(r"(?:[^@/:]+@)?([^/:]+):.*", url)
    return Destination(scp.group(1), 22) if scp else None


def unreachable(output: str) -> str | None:
    """What git's output says of a host it could not reach, or None when it says nothing."""
    for pattern, reason in _WORDS:
        found = pattern.search(output)
        if found:
            return reason.format(*found.groups())
    return None


def probe(where: Destination, timeout: float = PROBE_TIMEOUT) -> str | None:
    """The runner's own try at `where`: why it cannot connect, or None when it can."""
    try:
        with socket.create_connection((where.host, where.port), timeout=timeout):
            return None
    except socket.gaierror:
        return "the name does not resolve"
    except ConnectionRefusedError:
        return "the connection was refused"
    except OSError as exc:
        return f"the connection could not be made ({exc.strerror or exc})"


def unreachable_message(mount_path: str, url: str, where: Destination | None, why: str) -> str:
    """A mount whose git host could not be reached: which, why, and what to check."""
    host = str(where) if where else url
    return (
        f"mount {mount_path}: cannot reach {host} for {url}: {why}; check that the host is "
        "allowed through the sandbox (HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS, the sandbox config) "
        "and reachable from this machine's network"
    )
