"""Which `Host` this server answers to, checked before any route runs (DNS rebinding).

A page on another site can point a name it controls at 127.0.0.1 and have the browser send
requests there with `Host: that-name`; comparing `Origin` with that same `Host` proves
nothing. So a request is answered only for the names this server is reached by: loopback
names and addresses (always: health checks), the host it is bound to, the host of
HOOKSPAWN_PUBLIC_URL and HOOKSPAWN_ALLOWED_HOSTS. Ports are not compared.

A bracketed host is an IPv6 literal, and nothing may follow its closing bracket but
`:port`: `[::1].evil`, `[::1]evil.example` or a zone (`[::1%25eth0]`) name no host this
server could be, and are answered 400 `malformed_host` (the direct intake path asks the
same gate, so both answer alike).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from hookspawn.exposure import is_loopback
from hookspawn.web.http_errors import MalformedHost, MisdirectedRequest

__all__ = ["HostPolicy", "bracket_problem", "host_name"]

#: accepted Host values remembered per process: the few a server is really reached by
_REMEMBERED = 64


def host_name(value: str) -> str:
    """The host of a `Host` header value (or a setting's entry), without port or brackets,
    lower-cased, without a trailing dot: `[::1]:8000` → `::1`, `Web.:80` → `web`."""
    text = value.strip().lower()
    if text.startswith("["):
        inside, _, _ = text[1:].partition("]")
        return inside
    if text.count(":") == 1:
        text = text.partition(":")[0]
    return text.rstrip(".")


def bracket_problem(value: str) -> str | None:
    """Why a `Host` value that opens a bracket is not `[IPv6 address]` or `[IPv6 address]:port`
    (None: it is, or it opens no bracket)."""
    text = value.strip()
    if not text.startswith("["):
        return None
    inside, closed, rest = text[1:].partition("]")
    if not closed:
        return "the bracket opened before an IPv6 address is never closed"
    if "%" in inside:
        return "an IPv6 address with a zone (%) names no host a client can ask for"
    try:
        ipaddress.IPv6Address(inside)
    except ValueError:
        return f"{inside!r} between the brackets is not an IPv6 address"
    if rest and not (rest.startswith(":") and rest[1:].isdigit() and rest[1:].isascii()):
        return f"{rest!r} follows the bracketed address, where only :port may"
    return None


def _unspecified(name: str) -> bool:
    """0.0.0.0, :: or no name: an address to bind to, never one a client asks for."""
    if not name:
        return True
    try:
        return ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return False


@dataclass(frozen=True)
class HostPolicy:
    """`names`: the hosts accepted besides loopback; `any_host`: no check at all (a bind
    beyond loopback that names neither a public URL nor allowed hosts)."""

    names: frozenset[str]
    any_host: bool

    @classmethod
    def of(cls, *, bound: str, public_url: str | None, allowed: Sequence[str]) -> HostPolicy:
        names = {host_name(entry) for entry in allowed}
        public = host_name(urlsplit(public_url).netloc.rpartition("@")[2]) if public_url else ""
        if not _unspecified(public):
            names.add(public)
        configured = bool(names)
        bound_name = host_name(bound)
        if not _unspecified(bound_name):
            names.add(bound_name)
        return cls(frozenset(names), any_host=not configured and not is_loopback(bound_name))

    def accepts(self, host: str | None) -> bool:
        """A request without `Host` (HTTP/1.0) is accepted: no browser sends one; a malformed
        bracketed one (`bracket_problem`) never is, whatever the policy."""
        if host is None:
            return True
        if bracket_problem(host) is not None:
            return False
        if self.any_host:
            return True
        name = host_name(host)
        return "*" in self.names or name in self.names or is_loopback(name)

    def refusal(self, host: str) -> MisdirectedRequest:
        return MisdirectedRequest(
            f"this server does not answer to the host {host!r} (the request's Host header): "
            "add it to HOOKSPAWN_ALLOWED_HOSTS (comma-separated), or set HOOKSPAWN_PUBLIC_URL "
            "to the URL it is reached at",
            host=host,
        )


class HostGate:
    """The check as the app runs it: remembers the few accepted `Host` values it has seen."""

    def __init__(self, policy: HostPolicy) -> None:
        self.policy = policy
        self._accepted: set[bytes] = set()

    def refusal(self, raw: bytes | None) -> MisdirectedRequest | None:
        """None when the request may go on; else the error to answer it with."""
        if raw is None or raw in self._accepted:
            return None
        host = raw.decode("latin-1")
        problem = bracket_problem(host)
        if problem is not None:
            return MalformedHost(
                f"the request's Host header {host!r} is malformed: {problem}", host=host
            )
        if not self.policy.accepts(host):
            return self.policy.refusal(host)
        if len(self._accepted) < _REMEMBERED:
            self._accepted.add(raw)
        return None
