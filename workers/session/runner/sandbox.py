"""Session commands confined by the Anthropic Sandbox Runtime (`srt`): the host checks, the
startup probe, and the one call that wraps a command."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.sandbox.config import (
    HostPaths,
    Problem,
    SandboxConfig,
    SandboxMount,
    protected_host_path,
    reading_order,
    validate,
    warnings,
    well_formed_mounts,
)
from workers.errors import WorkerError
from workers.session.runner.command import Account, runner_account
from workers.session.runner.session_git import reach_through_proxy

__all__ = [
    "SYSTEM_READ",
    "SandboxUnavailable",
    "check_document",
    "confine",
    "host_paths_for",
    "host_problems",
    "load_config",
    "open_sandbox",
    "sandbox_available",
    "srt_scratch",
    "srt_settings",
]

log = logging.getLogger("hookspawn.sandbox")

#: host directories every confined command may read (programs, libraries, /etc); everything
#: else on the host is hidden unless it is the session root or a mount
SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: what srt needs on Linux beside itself (its README, "Platform-Specific Dependencies")
_SRT_NEEDS = ("bwrap", "socat", "rg")
_PROBE_SECONDS = 60.0
#: the longest socket path srt makes in its TMPDIR, after the directory; and the longest path
#: a Unix socket may have (sun_path, less its NUL)
_SRT_SOCKET = "/claude-socks-0123456789abcdef.sock"
_SOCKET_PATH_MAX = 107
_UNCONFINED = (
    "sandbox backend none: session commands run UNCONFINED on this host (development only)"
)


class SandboxUnavailable(WorkerError):
    """The sandbox cannot start here; the message says why. The runner refuses sessions."""

    code = "sandbox_unavailable"

    def refusal(self) -> str:
        """What a session this refused fails with: no command of it ran."""
        return f"the runner's sandbox cannot start, so no command was run: {self}"


def host_paths_for(data_dir: Path) -> HostPaths:
    """What the configuration rules protect on this host, for a hookspawn data directory."""
    return HostPaths(host_home=str(Path.home()), data_dir=os.path.abspath(data_dir))


def load_config(path: Path, *, host: HostPaths) -> tuple[SandboxConfig | None, list[Problem]]:
    """Read, validate and check a configuration file against this host: every problem."""
    try:
        raw = json.loads(path.read_text())
    except OSError as exc:
        return None, [Problem("(file)", f"cannot read it: {exc.strerror or exc}")]
    except json.JSONDecodeError as exc:
        return None, [
            Problem("(file)", f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        ]
    except UnicodeDecodeError:
        return None, [Problem("(file)", "not UTF-8 text")]
    return check_document(raw, host=host)


def check_document(raw: object, *, host: HostPaths) -> tuple[SandboxConfig | None, list[Problem]]:
    """A parsed configuration checked by the rules and against this host: every problem."""
    config, problems = validate(raw, host=host)
    # the host's answers too, for every mount well formed on its own: all problems at once
    mounts = list(enumerate(config.mounts)) if config else well_formed_mounts(raw, host=host)
    problems = sorted([*problems, *host_problems(mounts, host=host)], key=reading_order)
    return (None, problems) if problems else (config, [])


def host_problems(mounts: Sequence[tuple[int, SandboxMount]], *, host: HostPaths) -> list[Problem]:
    """The rules only the filesystem can answer: every source exists (it must before the
    runner starts), overlay sources are directories, and no source leads through a symbolic
    link to a path the rules protect."""
    problems: list[Problem] = []
    for n, mount in mounts:
        where = f"sandbox.mounts[{n}].source"
        if not os.path.exists(mount.source):
            problems.append(Problem(where, f"{mount.source} does not exist on this host"))
            continue
        if mount.mode == "overlay" and not os.path.isdir(mount.source):
            problems.append(
                Problem(where, f"{mount.source}: an overlay source must be a directory")
            )
        real = os.path.realpath(mount.source)
        why = protected_host_path(real, host) if real != mount.source else None
        if why:
            problems.append(
                Problem(where, f"{mount.source} leads to {real}, which is {why}: not shared")
            )
    return problems


def _tools(srt: str) -> dict[str, str]:
    """srt and the programs it runs on the host, as absolute paths found on this process's
    PATH (the command's own PATH may not reach them). Raises SandboxUnavailable naming the
    first one missing."""
    found: dict[str, str] = {}
    for tool in (srt, *_SRT_NEEDS):
        path = shutil.which(tool)
        if path is None:
            raise SandboxUnavailable(
                f"{tool} is not installed (srt needs bubblewrap, socat and ripgrep on Linux; "
                "scripts/setup installs them)"
            )
        found[tool] = os.path.abspath(path)
    return found


#: srt's default TMPDIR for commands, bound into every sandbox when it exists on the host
SRT_SHARED_TMP = "/tmp/claude"  # noqa: S108 (a path srt chose, named to keep it unwritable)


def srt_settings(
    config: SandboxConfig,
    workspace: Path,
    tools: Mapping[str, str] | None = None,
    *,
    allowed_domains: Sequence[str] = (),
    denied_domains: Sequence[str] = (),
    scratch: Path | None = None,
    read: Sequence[str] = (),
    session_paths: Sequence[str] = (),
) -> dict[str, Any]:
    """srt's settings for one session: the host hidden but for the system directories, the
    session root writable, each mount readable (and writable when `writable`); the network
    only through srt's proxy, to the `allowed_domains` (HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS,
    patterns checked when the settings are read): none, no network. `scratch`: srt's own
    temporary directory (see `confine`), readable inside so the proxy's sockets are, never
    writable (the command's own TMPDIR is in the session root, `session_tmp`). srt's default
    TMPDIR, /tmp/claude, is shown whenever it exists on the host, to every sandbox alike: it
    is kept unwritable. `read`: more host directories the command may read (the session's own
    tools, beside its root). `denied_domains`: what it never reaches, allowed or not (srt
    checks them first: the admin API's listener). `session_paths`: the session's own
    directories at their sandbox paths (`/workspace/x`, `/home/user`: bound there in the mount
    namespace srt starts in, see sandbox_paths), writable like the session root."""
    root = os.path.abspath(workspace)
    sources = [m.source for m in config.mounts]
    writable = [m.source for m in config.mounts if m.mode == "writable"]
    own = [] if scratch is None else [os.path.abspath(scratch)]
    return {
        "network": {
            "allowedDomains": list(allowed_domains),
            "deniedDomains": list(denied_domains),
        },
        "filesystem": {
            # srt reads everywhere by default: hide the whole host, then bind back what is
            # shared (allowRead wins over denyRead in srt). Each writable mount is hidden and
            # bound back on its own as well: srt binds a path back after the paths beneath it
            # within one hidden directory, so a readonly mount would otherwise cover the
            # writable one nested in it; a deeper hidden directory is bound back later.
            "denyRead": ["/", *writable],
            "allowRead": [
                *(p for p in SYSTEM_READ if os.path.exists(p)),
                *(root, *session_paths, *sources, *own, *read),
            ],
            "allowWrite": [root, *session_paths, *writable],
            "denyWrite": [SRT_SHARED_TMP],
        },
        **(
            {}
            if tools is None
            else {
                "bwrapPath": tools["bwrap"],
                "socatPath": tools["socat"],
                "ripgrep": {"command": tools["rg"]},
            }
        ),
    }


def _write_settings(settings: dict[str, Any], path: Path) -> None:
    """Atomically, readable by the account the command runs as, never by a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as out:
        json.dump(settings, out, indent=2)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def session_tmp(workspace: Path) -> Path:
    """A session command's own TMPDIR: `.tmp` in its session root, so what it writes there
    counts towards the session's disk limit, beside the home (never saved in a snapshot). The
    runner makes it for the session's account, and removes it when the session ends."""
    return Path(os.path.abspath(workspace)) / ".tmp"


def srt_scratch(account: Account | None, *, within: Path | None = None) -> Path:
    """A new directory for srt's own temporary files (the sockets leading to its proxy), for
    `confine`: in the system's temporary directory (or `within`), as a socket's path must stay
    short (a data directory may be deep), and private to `account`, the one srt runs as.
    Commands may read it, never write in it. The caller removes it when the session ends."""
    path = Path(tempfile.mkdtemp(prefix="hookspawn-srt-", dir=within))
    if account is not None:
        os.chown(path, account.uid, account.gid)
    return path


def confine(
    argv: Sequence[str],
    *,
    workspace: Path,
    config: SandboxConfig,
    env: Mapping[str, str],
    scratch: Path,
    srt: str = "srt",
    allowed_domains: Sequence[str] = (),
    destinations: Sequence[str] = (),
    read: Sequence[str] = (),
    denied_domains: Sequence[str] = (),
    session_paths: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `argv` confined to the session root
    `workspace` and the configured mounts, reaching only `allowed_domains` through srt's
    proxy. `env` (the runner's: HOME, agent env, …) wins over `sandbox.env`, which only
    supplies defaults. srt's settings are written beside the session root
    (`<workspace>.srt.json`), outside what the command may write.

    `scratch` (`srt_scratch`) becomes srt's own TMPDIR: srt puts the sockets that lead to its
    proxy there and binds them into the sandbox before it hides the host, /tmp included, so
    in /tmp they would be gone inside and the proxy out of reach. `scratch` is readable inside;
    the command's own TMPDIR is `session_tmp(workspace)`, in its session root (the sandbox's
    /tmp is a memory file system of srt's, private to the command).

    `destinations`: what this session alone may reach besides (`host:port`: its broker, its
    githubApp mounts' git hosts), through srt's proxy even on loopback; `read`: more host
    directories it may read; `denied_domains`: what it never reaches (the admin API's
    listener), even when listed in either; `session_paths`: the session's directories at
    their sandbox paths, writable (the command starts where they are bound there)."""
    merged = {**config.env, **env}
    if config.backend == "none":
        log.warning("%s: %s", _UNCONFINED, " ".join(argv[:2]))
        return list(argv), {**merged, "TMPDIR": str(session_tmp(workspace))}
    if config.backend != "srt":
        raise SandboxUnavailable(_backend_reason(config))
    tools = _tools(srt)
    workspace = Path(os.path.abspath(workspace))
    scratch = Path(os.path.abspath(scratch))
    if len(os.fsencode(scratch)) + len(_SRT_SOCKET) > _SOCKET_PATH_MAX:
        raise SandboxUnavailable(
            f"{scratch} is too long a path for srt's sockets (at most {_SOCKET_PATH_MAX} bytes "
            f"with {_SRT_SOCKET!r}): set TMPDIR to a shorter directory"
        )
    settings = workspace.with_name(f"{workspace.name}.srt.json")
    _write_settings(
        srt_settings(
            config,
            workspace,
            tools,
            allowed_domains=[*allowed_domains, *destinations],
            denied_domains=denied_domains,
            scratch=scratch,
            read=read,
            session_paths=session_paths,
        ),
        settings,
    )
    inner = reach_through_proxy(argv, destinations)
    return [tools[srt], "--settings", str(settings), "--", *inner], {
        **merged,
        "TMPDIR": str(scratch),
        # the TMPDIR srt hands the command (instead of the shared /tmp/claude)
        "CLAUDE_CODE_TMPDIR": str(session_tmp(workspace)),
    }


def _backend_reason(config: SandboxConfig) -> str:
    return (
        f"sandbox backend {config.backend} needs a VM host, which this runner does not "
        "have: use backend srt"
    )


def sandbox_available(
    config: SandboxConfig, *, srt: str = "srt", account: Account | None = None
) -> str | None:
    """Why the sandbox cannot start on this host (None: it can). For srt, its dependencies
    are looked up and a real confined command is run once, as `account` (the one session
    commands run as; None: this process's): it must write in its session root and fail to
    write beside it. A probe that passed is not run again by this process for the same
    programs and account."""
    if config.backend == "none":
        log.warning(_UNCONFINED)
        return None
    if config.backend != "srt":
        return _backend_reason(config)
    try:
        tools = _tools(srt)
    except SandboxUnavailable as exc:
        return str(exc)
    passed = _probe_identity(tools, account)
    if passed in _PASSED:
        return None
    reason = _probe_srt(srt, account)
    if reason is None:
        _PASSED.add(passed)
    return reason


#: the probes that passed in this process: (each program's file identity, the account); a
#: runner started again in the same process with the same programs is not probed again
_PASSED: set[tuple[object, ...]] = set()


def _probe_identity(tools: Mapping[str, str], account: Account | None) -> tuple[object, ...]:
    """What a passed probe holds for: the programs as files (replaced or upgraded: probed
    again) and the account the commands run as."""
    files = []
    for path in sorted(tools.values()):
        found = os.stat(path)
        files.append((path, found.st_ino, found.st_size, found.st_mtime_ns))
    return (tuple(files), (account.uid, account.gid) if account else None)


def _probe_srt(srt: str, account: Account | None) -> str | None:
    """One real confined command as `account`: None if it wrote in its root and not beside."""
    with tempfile.TemporaryDirectory(prefix="hookspawn-probe-") as tmp:
        workspace = Path(tmp) / "session"
        workspace.mkdir()
        outside = Path(tmp) / "outside"
        if account is not None:
            for path in (Path(tmp), workspace):
                os.chown(path, account.uid, account.gid)
        scratch = srt_scratch(account, within=Path(tmp))
        argv, env = confine(
            ["/bin/sh", "-c", f"echo ok > {workspace}/probe; echo no > {outside} || true"],
            workspace=workspace,
            config=SandboxConfig(backend="srt"),
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace)},
            scratch=scratch,
            srt=srt,
        )
        try:
            done = subprocess.run(
                argv,
                env=env,
                cwd=workspace,
                capture_output=True,
                timeout=_PROBE_SECONDS,
                user=account.uid if account else None,
                group=account.gid if account else None,
                extra_groups=[] if account else None,
            )
        except PermissionError as exc:
            return f"{runner_account(account)} cannot run {argv[0]}: {exc.strerror or exc}"
        except subprocess.TimeoutExpired:
            return f"srt did not finish a probe command within {_PROBE_SECONDS:.0f} s"
        if done.returncode != 0 or not (workspace / "probe").exists():
            lines = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {done.returncode}"
            return f"srt cannot start a sandbox here: {why}"
        if outside.exists():
            return "srt started, but a command wrote outside its session root"
    return None


def open_sandbox(
    path: Path | None, *, host: HostPaths, srt: str = "srt", account: Account | None = None
) -> SandboxConfig:
    """The runner's start: the configuration `HOOKSPAWN_SANDBOX_CONFIG` names, checked and
    probed as `account` (HOOKSPAWN_RUNNER_USER's, which session commands run as). Raises
    SandboxUnavailable with the reason; without a configuration there is no
    sandbox, so the runner refuses sessions rather than run them unconfined."""
    if path is None:
        raise SandboxUnavailable(
            "HOOKSPAWN_SANDBOX_CONFIG is unset: sessions are refused rather than run "
            "unconfined (name a configuration with backend srt; backend none runs them "
            "unconfined, for development)"
        )
    config, problems = load_config(path, host=host)
    if config is None:
        raise SandboxUnavailable("; ".join(p.line(str(path)) for p in problems))
    for warning in warnings(config):
        log.warning("%s", warning.line(str(path)))
    reason = sandbox_available(config, srt=srt, account=account)
    if reason is not None:
        raise SandboxUnavailable(reason)
    return config
