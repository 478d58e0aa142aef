"""Domain patterns for srt's `network.allowedDomains` (HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS):
what srt's proxy accepts, less what could never match a host name."""

from __future__ import annotations

import ipaddress
import re

__all__ = ["domain_problem"]

_PORT = re.compile(r"^[1-9][0-9]{0,4}$")
_LABEL = re.compile(r"^[A-Za-z0-9_-]+$")


def _split_port(entry: str) -> tuple[str, str | None]:
    """`host:port` → (host, port); `[v6]:port` → (`[v6]`, port); no port: None."""
    if entry.startswith("["):
        close = entry.find("]")
        rest = entry[close + 1 :] if close != -1 else ""
        if rest.startswith(":"):
            return entry[: close + 1], rest[1:]
        return entry, None
    host, colon, port = entry.rpartition(":")
    return (host, port) if colon and ":" not in host else (entry, None)


def _bracketed_problem(host: str) -> str | None:
    """`[v6]`: an IPv6 address between the brackets, nothing after them."""
    if not host.endswith("]") or host.count("]") != 1:
        return "an IPv6 address in brackets, then nothing or :port"
    try:
        address = ipaddress.ip_address(host[1:-1])
    except ValueError:
        return f"{host[1:-1]!r} is not an IP address"
    return "only an IPv6 address goes in brackets" if address.version != 6 else None


def domain_problem(entry: str) -> str | None:
    """Why `entry` is not a domain pattern for srt's `network.allowedDomains` (None: it is
    one): a host name with at least one dot (`example.com`), `localhost`, `*.` and such a name
    (`*.example.com`), an IPv4 address, or an IPv6 address in brackets (`[::1]`); each with an
    optional `:port` (1-65535). That is what srt accepts (its domain-pattern check), less what
    could never match a host name: host names are letters, digits, `-` and `_` between dots."""
    if "://" in entry:
        return "no scheme: a domain, not a URL"
    if "/" in entry:
        return "no path: a domain, not a URL"
    host, port = _split_port(entry)
    if port is not None and (not _PORT.match(port) or int(port) > 65535):
        return "a port is a number from 1 to 65535"
    if host.startswith("["):
        return _bracketed_problem(host)
    if ":" in host:
        return "an IPv6 address goes in brackets ([::1], [::1]:8080)"
    if host == "localhost":
        return None
    if host == "*" or (host.startswith("*.") and "." not in host[2:]):
        return "too broad: a wildcard is *. before a domain with a dot (*.example.com)"
    name = host[2:] if host.startswith("*.") else host
    if "*" in name:
        return "a wildcard is only *. at the start (*.example.com)"
    if "." not in name:
        return "a host name has a dot (example.com), or is localhost"
    if not all(_LABEL.match(label) for label in name.split(".")):
        return "a host name is letters, digits, - and _ between single dots"
    return None
