"""The agent's own git inside the sandbox: the standalone credential helper each session runs,
the environment setup and harness get for it, and the destinations (the broker, each githubApp
mount's git host) the sandbox lets that session reach through srt's proxy, and those it never
may (the admin API's listener)."""

from __future__ import annotations

import ipaddress
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from triggers.session.spec import SessionMount
from triggers.session.url_rewrite import Rewrite, rewritten
from workers.errors import SessionFailed
from workers.session.runner import credential_helper
from workers.session.runner.command import (
    Account,
    CommandOutput,
    CommandTimedOut,
    run_command,
)
from workers.session.runner.staging import BrokerLink, GitRunner

__all__ = [
    "HELPER_NAME",
    "admin_destinations",
    "helper_problem",
    "no_proxy",
    "place_helper",
    "reach_through_proxy",
    "sandbox_git",
    "session_destinations",
    "session_git_env",
    "tools_on_path",
]

HELPER_NAME = credential_helper.NAME
#: the NO_PROXY srt sets inside its sandbox (its generateProxyEnvVars): clients connect to
#: these directly, which the sandbox's own network cannot, so an allowed one is left out
SRT_NO_PROXY = (
    "localhost",
    "127.0.0.1",
    "::1",
    "169.254.0.0/16",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
)
#: the program that sets the proxy exceptions inside the sandbox, then runs the command
_ENV = "/usr/bin/env"
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: seconds the credential helper's check may take (it starts Python and does nothing)
HELPER_TIMEOUT = 30


class SessionCommand(Protocol):
    """How a run starts one of its commands (`SessionRun.command`)."""

    def __call__(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        *,
        timeout: float | None,
        confined: bool,
    ) -> int: ...


def place_helper(directory: Path) -> Path:
    """Write the credential helper into `directory` (made, root's and read-only to the
    session: the runner's own, beside the session root, never snapshotted): the standard
    library file credential_helper, run by the system's `python3`, so it needs nothing from
    hookspawn's installation. Its path."""
    directory.mkdir(mode=0o755, exist_ok=True)
    os.chmod(directory, 0o755)  # noqa: S103 (the session's account reads and runs it)
    helper = directory / HELPER_NAME
    source = Path(credential_helper.__file__).read_text()
    tmp = directory / f".{HELPER_NAME}.tmp"
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    with os.fdopen(fd, "w") as out:
        out.write("#!/usr/bin/env python3\n" + source)
    os.chmod(tmp, 0o755)  # noqa: S103 (the session's account runs it)
    os.replace(tmp, helper)
    return helper


def session_git_env(broker: BrokerLink | None, helper: Path, path: str) -> dict[str, str]:
    """What setup, harness and the auth preflight get for the agent's git: the broker's
    address, the session credential (in memory and the command's environment only), and the
    helper's directory first on `path`."""
    env = {"PATH": f"{helper.parent}:{path}"}
    if broker is not None and broker.url and broker.credential:
        env["HOOKSPAWN_BROKER_URL"] = broker.url
        env["HOOKSPAWN_SESSION_CREDENTIAL"] = broker.credential
    return env


def tools_on_path(directory: Path | None) -> str:
    """A line of shell putting the session's tools directory back first on PATH: setup runs
    in a login shell, whose profile sets PATH anew ('' without a directory)."""
    if directory is None:
        return ""
    return f'PATH={shlex.quote(str(directory))}:"$PATH"; export PATH\n'


def _destination(url: str) -> str | None:
    """`host:port` of an http(s) url; None for another scheme (file://, ssh)."""
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        return None
    host = parts.hostname
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def session_destinations(
    broker: BrokerLink | None, mounts: Sequence[SessionMount], rewrites: Sequence[Rewrite]
) -> list[str]:
    """What this session alone may reach from inside the sandbox, as srt's allowedDomains
    entries (`host:port`): the broker, and the git host of each githubApp mount after
    HOOKSPAWN_GIT_URL_REWRITE."""
    urls = [broker.url] if broker is not None and broker.url else []
    urls += [rewritten(m.url, rewrites) for m in mounts if m.auth == "githubApp"]
    found: list[str] = []
    for url in urls:
        destination = _destination(url)
        if destination is not None and destination not in found:
            found.append(destination)
    return found


#: where the admin API listens when nothing says otherwise (`web`'s default --port)
_ADMIN_DEFAULT = "http://127.0.0.1:8000"
#: every name a sandbox could give this host's loopback listener by (0.0.0.0 reaches it too)
_LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]", "0.0.0.0")  # noqa: S104 - denied, not bound


def admin_destinations(public_url: str | None, url: str | None) -> list[str]:
    """srt's deniedDomains entries (`host:port`) for the admin API's listener: at
    HOOKSPAWN_PUBLIC_URL and at HOOKSPAWN_URL (unset: the client commands' default,
    http://127.0.0.1:8000). A sandbox reaches none of them, whatever
    HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS lists, since srt's proxy checks its deny list first. One
    on loopback (or on every address) is denied by every loopback name and address of that
    port: `127.0.0.1`, `localhost`, `[::1]`, `0.0.0.0`."""
    given = [u for u in (public_url, url or _ADMIN_DEFAULT) if u]
    found: list[str] = []
    for url in given:
        destination = _destination(url)
        if destination is None:
            continue
        port = destination.rpartition(":")[2]
        entries = [destination]
        if _local(_host(destination)):
            entries += [f"{name}:{port}" for name in _LOCAL_NAMES]
        for entry in entries:
            if entry not in found:
                found.append(entry)
    return found


def _local(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def session_reads(
    tools: Path, mounts: Sequence[SessionMount], rewrites: Sequence[Rewrite]
) -> list[str]:
    """What this session alone may read from inside the sandbox beyond its root: its tools
    directory, and each githubApp mount's repository when the rewrite makes it a local path
    (`file://`), so the preflight and the agent's git reach it as staging did."""
    found = [str(tools)] if tools.is_dir() else []
    for mount in mounts:
        parts = urlsplit(rewritten(mount.url, rewrites))
        if mount.auth == "githubApp" and parts.scheme == "file" and parts.path not in found:
            found.append(parts.path)
    return found


def _host(destination: str) -> str:
    host = destination.rpartition(":")[0]
    return host[1:-1] if host.startswith("[") else host


def _covers(entry: str, host: str) -> bool:
    if entry == host:
        return True
    try:
        return "/" in entry and ipaddress.ip_address(host) in ipaddress.ip_network(entry)
    except ValueError:
        return False


def no_proxy(destinations: Sequence[str]) -> str | None:
    """srt's NO_PROXY less every entry that covers an allowed destination (a loopback broker,
    a git server on a private address), so clients send those through srt's proxy, the only
    way out of the sandbox; None when srt's own value is right."""
    hosts = [_host(d) for d in destinations]
    kept = [e for e in SRT_NO_PROXY if not any(_covers(e, h) for h in hosts)]
    return None if len(kept) == len(SRT_NO_PROXY) else ",".join(kept)


def reach_through_proxy(argv: Sequence[str], destinations: Sequence[str]) -> list[str]:
    """`argv` run inside the sandbox with NO_PROXY (srt's, which it sets after the caller's
    environment) no longer sending the allowed destinations around the proxy."""
    value = no_proxy(destinations)
    if value is None:
        return list(argv)
    return [_ENV, f"NO_PROXY={value}", f"no_proxy={value}", *argv]


def sandbox_git(command: SessionCommand, env: Mapping[str, str], timeout: float) -> GitRunner:
    """git run inside the sandbox, as the session's account, with `env` (the harness's): how
    the agent's own git runs, which the auth preflight checks end to end."""

    def git(args: Sequence[str], cwd: Path, extra: Mapping[str, str]) -> int:
        git_env = {"GIT_TERMINAL_PROMPT": "0", **env, **extra}
        try:
            return command(["git", *args], cwd, git_env, timeout=timeout, confined=True)
        except CommandTimedOut:
            raise SessionFailed(
                f"`git {args[0]}` in {cwd} ran longer than {timeout:g}s and was stopped",
                code="git_auth_failed",
            ) from None

    return git


def helper_problem(
    helper: str, account: Account | None, *, cwd: Path, env: Mapping[str, str], log: CommandOutput
) -> str | None:
    """Why `account` cannot run the git credential helper, or None: it runs `erase` (which
    keeps nothing, so does nothing) as git would run it."""
    try:
        code = run_command(
            [helper, "erase"],
            cwd=cwd,
            env=dict(env),
            timeout=HELPER_TIMEOUT,
            log=log,
            cancel=lambda: False,
            account=account,
            stdin=b"",
        )
    except (PermissionError, FileNotFoundError) as exc:
        return str(exc.strerror or exc).lower()
    except CommandTimedOut:
        return f"`{Path(helper).name} erase` ran longer than {HELPER_TIMEOUT}s"
    return None if code == 0 else f"`{Path(helper).name} erase` exited with status {code}"
