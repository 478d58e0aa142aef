"""The sandbox's own paths: a confined command of a session sees each of its checkouts at the
mount's `mountPath`, its home at `/home/user` and its working directory where the spec names
it, whatever the session root's host path.

Each confined command starts in a private mount namespace of its own, made by the root runner
in the command's child before it takes the session account's identity and execs srt: the
session's directories under its root are bound at their sandbox paths there (srt's bubblewrap
inherits that view), so two sessions running at once each see only their own `/workspace/x`.
The host keeps the empty directories the binds are mounted on (made once, owned by root);
nothing else on the host changes. Where the runner cannot do this (not root, no mount
namespaces), commands see host paths, as the runner says at start and in each session's log.
"""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "HOME",
    "SYSTEM",
    "Bind",
    "SandboxPaths",
    "open_sandbox_paths",
    "plan",
]

log = logging.getLogger(__name__)

#: the sandbox's home directory, mapped under the session root like every sandbox path
HOME = "/home/user"

#: from <sched.h> and <sys/mount.h>
_CLONE_NEWNS = 0x00020000
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


@dataclass(frozen=True)
class Bind:
    """One of a session's directories (`source`, under its root) shown at `target`, the path
    the sandbox knows it by."""

    source: Path
    target: str


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def plan(workspace: Path, targets: Iterable[str], keep: Iterable[Path | str]) -> tuple[Bind, ...]:
    """The binds that show `targets` (sandbox paths: mountPaths, the home, the working
    directory) at their own paths, each from where it lands under the session root
    (`<root>/<path>`). Each is shown by binding its shallowest ancestor that hides nothing the
    sandbox needs (`keep`): `/workspace` for `/workspace/widgets` (so `/workspace` is the
    session's own, as in a VM), `/home/user` rather than a `/home` holding the data
    directory; a target shown by another's bind needs none of its own. Raises ValueError
    naming a target that would hide something in `keep` whatever its ancestor."""
    root = os.path.abspath(workspace)
    needed = [os.path.abspath(p) for p in keep]
    chosen: set[str] = set()
    for target in {os.path.normpath(t) for t in targets}:
        parts = target.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            point = "/" + "/".join(parts[:depth])
            hidden = [path for path in needed if _under(path, point)]
            if not hidden:
                chosen.add(point)
                break
        else:
            raise ValueError(f"{target} would hide {hidden[0]}, which the sandbox needs")
    kept: list[str] = []
    for point in sorted(chosen, key=lambda t: (t.count("/"), t)):
        if not any(_under(point, outer) for outer in kept):
            kept.append(point)
    return tuple(Bind(Path(root + point), point) for point in sorted(kept))


def _check(ok: int, what: str) -> None:
    if ok != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _enter(binds: Sequence[Bind]) -> None:
    """In a command's child, as root: a private mount namespace of its own with `binds`
    mounted (nothing of it reaches the host's namespace)."""
    if _libc is None:
        raise OSError(0, "mount namespaces are Linux's")
    _check(_libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(
        _libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None),
        "making / private in the new mount namespace",
    )
    for bind in binds:
        source, target = os.fsencode(bind.source), os.fsencode(bind.target)
        _check(
            _libc.mount(source, target, None, _MS_BIND | _MS_REC, None),
            f"binding {bind.source} at {bind.target}",
        )


@dataclass(frozen=True)
class SandboxPaths:
    """One session's sandbox paths: its binds, made for each of its confined commands."""

    binds: tuple[Bind, ...]

    @property
    def targets(self) -> list[str]:
        """The sandbox paths the binds show (what the sandbox lets the command write)."""
        return [bind.target for bind in self.binds]

    def inside(self, host: Path) -> str | None:
        """Where the host path `host` (under the session root) shows in the sandbox; None when
        no bind shows it."""
        path = os.path.abspath(host)
        for bind in self.binds:
            source = str(bind.source)
            if _under(path, source):
                return bind.target + path[len(source) :]
        return None

    def enter(self, cwd: str | None) -> Callable[[], None]:
        """What a confined command's child runs first, as root: its own mount namespace with
        the binds, then `cwd` (a sandbox path) as its working directory. A failure is written
        to the command's standard error (the session log) before it is raised."""
        binds = self.binds

        def enter() -> None:
            try:
                _enter(binds)
                if cwd is not None:
                    os.chdir(cwd)
            except OSError as exc:
                os.write(2, f"hookspawn: sandbox paths: {exc.strerror or exc}\n".encode())
                raise

        return enter

    def prepare(self) -> str | None:
        """Make the directories the binds are mounted on (empty, root's) where the host has
        none, as the session starts. Why the binds cannot be made for this session, or None:
        a mount point is not a plain directory of the host's."""
        for bind in self.binds:
            target = bind.target
            try:
                os.makedirs(target, mode=0o755, exist_ok=True)
            except OSError as exc:
                return f"cannot make the mount point {target} on this host: {exc.strerror or exc}"
            if os.path.realpath(target) != target:
                return f"{target} is a symbolic link on this host ({os.path.realpath(target)})"
            if not bind.source.is_dir():
                return f"{bind.source} is not a directory"
        return None


#: the host paths a bind never covers, whatever the session (its commands need them)
SYSTEM = (
    *("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"),
    *("/proc", "/dev", "/sys", "/run", "/tmp", "/var/tmp"),  # noqa: S108 (never bound over)
)


def open_sandbox_paths() -> str | None:
    """Whether sessions get their sandbox paths on this host: None when they do, else why not
    (logged once here; their commands then see host paths, and each session's log says so).
    A child of this process enters a mount namespace and binds one directory on another."""
    if os.geteuid() != 0:
        why: str | None = "the runner is not root, so it cannot give each session a mount namespace"
    else:
        why = _probe()
    if why is None:
        log.info(
            "sandbox paths: each session's commands see its checkouts at their mountPaths and "
            "its home at %s (a mount namespace per command)",
            HOME,
        )
    else:
        log.warning(
            "sandbox paths are host paths: session commands see their checkouts and home "
            "under the session root (%s)",
            why,
        )
    return why


def _probe() -> str | None:
    with tempfile.TemporaryDirectory(prefix="hookspawn-ns-") as tmp:
        source, target = Path(tmp, "source"), Path(tmp, "target")
        source.mkdir()
        target.mkdir()
        (source / "seen").touch()
        paths = SandboxPaths((Bind(source, str(target)),))
        with tempfile.TemporaryFile() as said:
            try:
                done = subprocess.run(
                    ["/bin/sh", "-c", f"test -e {target}/seen"],
                    preexec_fn=paths.enter(None),
                    stdout=subprocess.DEVNULL,
                    stderr=said,
                    timeout=30,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                said.seek(0)
                words = said.read().decode(errors="replace").strip()
                return f"no mount namespace here ({words or exc})"
        if done.returncode != 0:
            return (
                "no mount namespace here (a bound directory was not seen: exit status "
                f"{done.returncode})"
            )
        if (target / "seen").exists():
            return "a bind made for a command reached this host's mount namespace"
    return None
