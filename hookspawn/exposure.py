"""Whether the admin API may listen on an address: loopback, a token, or an explicit opt-out."""

from __future__ import annotations

import ipaddress

OPEN_FLAG = "--allow-open-admin"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost` reach only this machine; anything else (0.0.0.0, ::,
    a name, an interface's address) may be reachable from the network."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def open_admin_refusal(command: str, host: str, *, token: str | None, allowed: bool) -> str | None:
    """Why `command` must not start listening on `host`, or None when it may.

    Without HOOKSPAWN_ADMIN_TOKEN every admin route (starting agents included) answers anyone
    who can reach the address, so a non-loopback bind needs the token or an explicit opt-out.
    """
    if token or allowed or is_loopback(host):
        return None
    return (
        f"hookspawn {command}: refusing to listen on {host} without HOOKSPAWN_ADMIN_TOKEN: "
        "anyone who can reach that address could use the admin API and start agents. "
        "Set HOOKSPAWN_ADMIN_TOKEN, listen on 127.0.0.1 (--host 127.0.0.1), "
        f"or pass {OPEN_FLAG} to run it open anyway."
    )


def open_admin_warning(host: str, port: int, *, token: str | None) -> str | None:
    """The warning to log at start when the admin API is open on a non-loopback address."""
    if token or is_loopback(host):
        return None
    return (
        f"the admin API on {host}:{port} is open to anyone who can reach it: "
        f"HOOKSPAWN_ADMIN_TOKEN is not set and {OPEN_FLAG} was given"
    )
