"""The sandbox configuration (`sandbox.backend`, `.mounts`, `.env`): its model and its rules."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

from agents.sandbox.env import Problem, sandbox_env

__all__ = [
    "BACKENDS",
    "MICROSANDBOX_HOME",
    "MICROSANDBOX_WORKSPACE",
    "SECURITY_HOME_DIRS",
    "HostPaths",
    "Problem",
    "SandboxConfig",
    "SandboxMount",
    "is_within",
    "protected_host_path",
    "reading_order",
    "validate",
    "warnings",
    "well_formed_mounts",
]

Backend = Literal["srt", "microsandbox", "none"]
Mode = Literal["readonly", "writable", "overlay"]

#: `none` runs session commands unconfined: for development only, and loudly logged
BACKENDS: tuple[Backend, ...] = ("srt", "microsandbox", "none")
MODES: tuple[Mode, ...] = ("readonly", "writable", "overlay")
#: inside a microsandbox VM, where the session root's `workspace/` and `home/user` appear
MICROSANDBOX_WORKSPACE = "/workspace"
MICROSANDBOX_HOME = "/home/user"
#: what a runtime keeps its credentials and keys in, relative to its home
SECURITY_HOME_DIRS = (
    ".ssh",
    ".gnupg",
    ".gitconfig",
    ".git-credentials",
    ".config/git",
    ".config/gh",
    ".netrc",
    ".docker",
    ".aws",
    ".kube",
)
#: paths a VM runtime owns outright
_VM_SYSTEM = ("/proc", "/dev", "/sys")
_MOUNT_FIELDS = frozenset({"source", "target", "mode"})
_SANDBOX_FIELDS = frozenset({"backend", "mounts", "env"})
_LEGACY = ("sandboxReadRoots", "sandboxWriteRoots")


@dataclass(frozen=True)
class HostPaths:
    """What the rules protect on this machine: the host home `~` expands to, and hookspawn's
    data directory, which holds every session root (with srt, each session's workspace and
    runtime home are there), the logs and the embedded Redis data."""

    host_home: str
    data_dir: str


@dataclass(frozen=True)
class SandboxMount:
    """One host directory a session sees: absolute paths, `~` expanded."""

    source: str
    target: str
    mode: Mode


@dataclass(frozen=True)
class SandboxConfig:
    """A valid configuration: the backend, its mounts, and the literal `sandbox.env`."""

    backend: Backend
    mounts: tuple[SandboxMount, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def is_within(path: str, root: str) -> bool:
    """`path` is `root` or lies beneath it (both normalised and absolute)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _expand(value: str, home: str) -> str | None:
    """`~` and `~/…` → under `home`, normalised; None when not absolute afterwards."""
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    if not value.startswith("/"):
        return None
    normal = posixpath.normpath(value)
    return "/" + normal.lstrip("/")


def _path(
    raw: Mapping[str, object], key: str, where: str, home: str, problems: list[Problem]
) -> str | None:
    value = raw.get(key)
    if value is None:
        problems.append(Problem(f"{where}.{key}", "required"))
        return None
    if not isinstance(value, str) or not value:
        problems.append(Problem(f"{where}.{key}", "must be a non-empty path string"))
        return None
    if value.startswith("~") and not (value == "~" or value.startswith("~/")):
        problems.append(Problem(f"{where}.{key}", f"{value!r}: only ~ and ~/ are expanded"))
        return None
    expanded = _expand(value, home)
    if expanded is None:
        problems.append(Problem(f"{where}.{key}", f"{value!r} is not absolute (after ~ expansion)"))
    return expanded


def _mount(
    raw: object, where: str, backend: Backend | None, host: HostPaths, problems: list[Problem]
) -> SandboxMount | None:
    if not isinstance(raw, dict):
        problems.append(Problem(where, "must be an object with source, target and mode"))
        return None
    before = len(problems)
    if "readOnly" in raw:
        problems.append(
            Problem(
                f"{where}.readOnly",
                "the old field: use mode (`hookspawn sandbox migrate` rewrites it)",
            )
        )
    for key in sorted(set(raw) - _MOUNT_FIELDS - {"readOnly"}):
        problems.append(Problem(f"{where}.{key}", "unknown field (source, target, mode)"))
    # the target of a VM mount is inside the VM: its `~` is the runtime home there
    target_home = MICROSANDBOX_HOME if backend == "microsandbox" else host.host_home
    source = _path(raw, "source", where, host.host_home, problems)
    target = _path(raw, "target", where, target_home, problems)
    mode = raw.get("mode")
    if mode is None and "readOnly" not in raw:
        problems.append(Problem(f"{where}.mode", "required: readonly, writable or overlay"))
    elif mode is not None and mode not in MODES:
        problems.append(
            Problem(f"{where}.mode", f"{mode!r}: must be readonly, writable or overlay")
        )
    if len(problems) > before or source is None or target is None or mode not in MODES:
        return None
    return SandboxMount(source=source, target=target, mode=cast(Mode, mode))


def _protected(backend: Backend, host: HostPaths) -> list[tuple[str, str, bool]]:
    """(path, what it is, whether a mount beneath it is refused too) where `backend`'s targets
    live: inside the VM for microsandbox, on the host otherwise."""
    if backend != "microsandbox":
        return _host_protected(host)
    home = MICROSANDBOX_HOME
    paths = [(MICROSANDBOX_WORKSPACE, "the workspace", True), (home, "the runtime home", False)]
    paths += [(p, "a path the VM runtime owns", True) for p in _VM_SYSTEM]
    return paths + _security_dirs(home, "the runtime home")


def _host_protected(host: HostPaths) -> list[tuple[str, str, bool]]:
    roots = (host.data_dir, "the data directory (session workspaces and homes)", True)
    return [roots, *_security_dirs(host.host_home, "the host home")]


def _security_dirs(home: str, whose: str) -> list[tuple[str, str, bool]]:
    return [
        (posixpath.join(home, d), f"a security-relevant path of {whose}", True)
        for d in SECURITY_HOME_DIRS
    ]


def protected_host_path(path: str, host: HostPaths) -> str | None:
    """Why a host path may not be shared with a session (None: it may)."""
    hit = _replaces(path, _host_protected(host))
    return None if hit is None else f"{hit[0]}, {hit[1]}"


def _replaces(path: str, protected: list[tuple[str, str, bool]]) -> tuple[str, str] | None:
    for root, what, below in protected:
        if is_within(root, path) or (below and is_within(path, root)):
            return root, what
    return None


def _mount_rules(
    mounts: list[tuple[int, SandboxMount]], backend: Backend, host: HostPaths
) -> list[Problem]:
    problems: list[Problem] = []
    protected = _protected(backend, host)
    seen: dict[str, tuple[int, SandboxMount]] = {}
    for n, m in mounts:
        where = f"sandbox.mounts[{n}]"
        hit = _replaces(m.target, protected)
        if hit and backend == "srt" and m.mode == "readonly" and hit[0] == host.data_dir:
            problems.append(
                Problem(
                    f"{where}.mode",
                    f"readonly {m.target} touches {hit[0]}, {hit[1]}: srt mounts only add "
                    "access, a readonly mount cannot take write access away from the workspace",
                )
            )
        elif hit:
            problems.append(
                Problem(
                    f"{where}.target",
                    f"{m.target} overlaps {hit[0]}, {hit[1]}: mounts cannot replace "
                    "protected runtime paths",
                )
            )
        if backend == "microsandbox":
            exposed = _replaces(m.source, _host_protected(host))
            if exposed:
                problems.append(
                    Problem(
                        f"{where}.source",
                        f"{m.source} overlaps {exposed[0]}, {exposed[1]}: a mount cannot "
                        "share a protected host path",
                    )
                )
        if m.target in seen:
            k, other = seen[m.target]
            rule = (
                "different sources cannot map to the same target"
                if other.source != m.source
                else "the same mount is listed twice"
            )
            problems.append(
                Problem(
                    f"{where}.target",
                    f"{m.target} is already the target of sandbox.mounts[{k}]: {rule}",
                )
            )
        else:
            seen[m.target] = (n, m)
        if backend == "srt":
            problems += _srt_rules(n, m, mounts)
        elif backend == "none":
            problems.append(Problem(where, "backend none confines nothing, so it takes no mounts"))
        if m.mode == "overlay":
            problems += _overlay_rules(n, m, mounts)
    return problems


def _overlay_rules(
    n: int, m: SandboxMount, mounts: list[tuple[int, SandboxMount]]
) -> list[Problem]:
    for k, other in mounts:
        if k != n and (is_within(other.target, m.target) or is_within(m.target, other.target)):
            return [
                Problem(
                    f"sandbox.mounts[{n}].target",
                    f"overlay target {m.target} overlaps sandbox.mounts[{k}] ({other.target}): "
                    "overlay targets cannot overlap other mounts",
                )
            ]
    return []


def _srt_rules(n: int, m: SandboxMount, mounts: list[tuple[int, SandboxMount]]) -> list[Problem]:
    where = f"sandbox.mounts[{n}]"
    problems: list[Problem] = []
    if m.source != m.target:
        problems.append(
            Problem(
                f"{where}.target",
                f"{m.target} differs from source {m.source}: srt shows host paths where they "
                "are, so source and target must resolve to the same path",
            )
        )
    if m.mode == "overlay":
        problems.append(
            Problem(
                f"{where}.mode",
                "srt cannot overlay: use readonly or writable (overlay needs microsandbox)",
            )
        )
    return problems


def warnings(config: SandboxConfig) -> list[Problem]:
    """What a valid configuration holds that has no effect: with srt (whose mounts only add
    access), a readonly mount inside a writable one, which stays writable there."""
    if config.backend != "srt":
        return []
    found: list[Problem] = []
    for n, m in enumerate(config.mounts):
        around = [
            (k, other)
            for k, other in enumerate(config.mounts)
            if k != n and other.mode == "writable" and is_within(m.target, other.target)
        ]
        if m.mode == "readonly" and around:
            k, other = max(around, key=lambda pair: len(pair[1].target))
            found.append(
                Problem(
                    f"sandbox.mounts[{n}].mode",
                    f"readonly {m.target} lies inside the writable sandbox.mounts[{k}] "
                    f"({other.target}): srt mounts only add access, so it stays writable "
                    "(valid, but the readonly mode has no effect)",
                )
            )
    return found


def _legacy(security: object) -> list[Problem]:
    if not isinstance(security, dict):
        return []
    return [
        Problem(
            f"security.{key}",
            "the old field: use sandbox.mounts (`hookspawn sandbox migrate` rewrites it)",
        )
        for key in _LEGACY
        if key in security
    ]


def reading_order(problem: Problem) -> tuple[int, int]:
    """Problems in the order a reader meets the fields: legacy, backend, mounts by index, env
    (a sort key; a stable sort keeps each mount's own problems before the host's)."""
    field = problem.field
    if field.startswith("sandbox.mounts["):
        return 2, int(field[len("sandbox.mounts[") :].split("]", 1)[0])
    if field.startswith("sandbox.env"):
        return 3, 0
    return (0 if field.startswith("security") else 1), 0


def well_formed_mounts(raw: object, *, host: HostPaths) -> list[tuple[int, SandboxMount]]:
    """The mounts of a document that are well formed on their own, with their index: what the
    host can still be asked about when the document as a whole breaks a rule."""
    sandbox = raw.get("sandbox") if isinstance(raw, dict) else None
    items = sandbox.get("mounts") if isinstance(sandbox, dict) else None
    if not isinstance(items, list):
        return []
    backend = sandbox.get("backend") if isinstance(sandbox, dict) else None
    known = cast(Backend, backend) if backend in BACKENDS else None
    found = []
    for n, item in enumerate(items):
        mount = _mount(item, f"sandbox.mounts[{n}]", known, host, [])
        if mount is not None:
            found.append((n, mount))
    return found


def validate(raw: object, *, host: HostPaths) -> tuple[SandboxConfig | None, list[Problem]]:
    """A parsed JSON document → the configuration, or None and every rule it breaks.
    Checks what can be known without the filesystem; sources are checked by the host."""
    problems: list[Problem] = []
    if not isinstance(raw, dict):
        return None, [Problem("(document)", "must be a JSON object with a sandbox object")]
    problems += _legacy(raw.get("security"))
    sandbox = raw.get("sandbox")
    if not isinstance(sandbox, dict):
        problems.append(Problem("sandbox", "required: an object with backend, mounts and env"))
        return None, problems
    for key in sorted(set(sandbox) - _SANDBOX_FIELDS):
        problems.append(Problem(f"sandbox.{key}", "unknown field (backend, mounts, env)"))
    backend = sandbox.get("backend")
    if backend not in BACKENDS:
        message = "required" if backend is None else f"{backend!r}: unknown"
        problems.append(
            Problem(
                "sandbox.backend",
                f"{message}: srt or microsandbox (none: unconfined, for development only)",
            )
        )
        backend = None
    raw_mounts = sandbox.get("mounts", [])
    mounts: list[tuple[int, SandboxMount]] = []
    if not isinstance(raw_mounts, list):
        problems.append(Problem("sandbox.mounts", "must be a list of mounts"))
        raw_mounts = []
    for n, item in enumerate(raw_mounts):
        mount = _mount(item, f"sandbox.mounts[{n}]", backend, host, problems)
        if mount is not None:
            mounts.append((n, mount))
    env = sandbox_env(sandbox.get("env"), problems)
    if backend is not None:
        problems += _mount_rules(mounts, backend, host)
    if problems or backend is None:
        return None, sorted(problems, key=reading_order)
    return SandboxConfig(backend=backend, mounts=tuple(m for _, m in mounts), env=env), []
