"""A cgroup per session: the memory, process and CPU limits everything setup and the harness
start runs under, in cgroup v1's `memory`, `pids` and `cpu` hierarchies or in cgroup v2."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agents.environment_spec import Resources
from workers.errors import WorkerError

__all__ = ["CgroupLimits", "CgroupsUnavailable", "SessionCgroup", "SessionCgroups"]

log = logging.getLogger(__name__)

CONTROLLERS = ("memory", "pids", "cpu")
#: the directory made in the runner's own cgroup that holds one cgroup per session
PARENT = "hookspawn"
#: the CPU quota's period, in microseconds (the kernel's default)
CPU_PERIOD = 100_000
#: how long removing a session's cgroup waits for what it killed to be gone
_REMOVE_SECONDS = 5.0
_MIB = 1024 * 1024
_OOM_KILL = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)


class CgroupsUnavailable(WorkerError):
    """No cgroup can be made for sessions here; the message says why."""

    code = "cgroups_unavailable"


@dataclass(frozen=True)
class CgroupLimits:
    """What one session's cgroup allows: bytes of memory and CPUs (None: no limit), and tasks
    (processes and threads) at once."""

    memory: int | None
    cpus: int | None
    processes: int

    @classmethod
    def of(cls, resources: Resources | None, processes: int) -> CgroupLimits:
        """From an environment's `resources` (`memoryMB`, `cpuCount`) and the process cap."""
        if resources is None:
            return cls(memory=None, cpus=None, processes=processes)
        memory = resources.memory_mb
        return cls(
            memory=memory * _MIB if memory else None,
            cpus=resources.cpu_count or None,
            processes=processes,
        )

    def describe(self) -> str:
        memory = f"memory {self.memory // _MIB} MiB" if self.memory else "memory unlimited"
        cpus = f"{self.cpus} CPU" + ("s" if self.cpus != 1 else "") if self.cpus else "any CPU"
        return f"{memory}, {cpus}, at most {self.processes} processes"


def _write(path: Path, value: str) -> None:
    with path.open("w") as out:
        out.write(value)


def _unescape(field: str) -> str:
    """A mountinfo path field: spaces and the like are written as octal escapes (`\\040`)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _under(path: str, root: str) -> str | None:
    """`path` (a cgroup path) relative to a mount's `root`, or None when outside it."""
    if root == "/":
        return path
    if path == root or path.startswith(root + "/"):
        return path[len(root) :] or "/"
    return None


def _mounted(
    mountinfo: list[str], own_v1: Mapping[str, str], own_v2: str | None
) -> tuple[dict[str, Path], Path | None]:
    """Where this process's own cgroups are: per v1 controller, and in cgroup v2."""
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mountinfo:
        fields, _, rest = line.partition(" - ")
        left, right = fields.split(), rest.split()
        if len(left) < 5 or len(right) < 3:
            continue
        root, point, kind = _unescape(left[3]), _unescape(left[4]), right[0]
        if kind == "cgroup":
            for controller in set(right[2].split(",")) & set(CONTROLLERS):
                inside = _under(own_v1.get(controller, ""), root)
                if inside is not None:
                    v1[controller] = Path(point + inside.rstrip("/"))
        elif kind == "cgroup2" and own_v2 is not None:
            inside = _under(own_v2, root)
            if inside is not None:
                v2 = Path(point + inside.rstrip("/"))
    return v1, v2


def _own_dirs(proc: Path) -> tuple[int, dict[str, Path]]:
    """The directories of this process's own cgroups, per controller: all three from cgroup
    v1 hierarchies, else from cgroup v2. Raises CgroupsUnavailable saying what is missing."""
    try:
        mountinfo = (proc / "mountinfo").read_text().splitlines()
        membership = (proc / "cgroup").read_text().splitlines()
    except OSError as exc:
        raise CgroupsUnavailable(f"cannot read {proc}: {exc.strerror or exc}") from None
    own_v1: dict[str, str] = {}
    own_v2 = None
    for line in membership:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            own_v2 = path
        for controller in controllers.split(","):
            own_v1[controller] = path
    v1, v2 = _mounted(mountinfo, own_v1, own_v2)
    if all(c in v1 for c in CONTROLLERS):
        return 1, v1
    if v2 is not None:
        try:
            available = (v2 / "cgroup.controllers").read_text().split()
        except OSError:
            available = []
        if all(c in available for c in CONTROLLERS):
            return 2, dict.fromkeys(CONTROLLERS, v2)
    missing = ", ".join(c for c in CONTROLLERS if c not in v1)
    raise CgroupsUnavailable(
        f"no cgroup v1 hierarchy for {missing} and no cgroup v2 with memory, pids and cpu "
        "is mounted for this process"
    )


class SessionCgroup:
    """One session's cgroup (a directory per hierarchy): its limits set, a process moved in
    by `enter` (run in the child before it execs), removed with whatever is left in it."""

    def __init__(self, version: int, dirs: Mapping[str, Path], limits: CgroupLimits) -> None:
        self.version, self.dirs, self.limits = version, dict(dirs), limits
        self._fds: list[int] = []
        try:
            for path in self.paths:
                path.mkdir(exist_ok=True)  # one a lost runner left is taken over
            self._limit()
            # opened here, by the runner: the kernel checks the right to move a process into a
            # cgroup against who opened the file, so a child that already switched to the
            # runner user may still move itself in, and nothing is handed to that account
            for path in self.paths:
                self._fds.append(os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for fd in self._fds:
                os.close(fd)
            for path in self.paths:
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise

    @property
    def paths(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    def _limit(self) -> None:
        memory, pids, cpu = (self.dirs[c] for c in CONTROLLERS)
        limits = self.limits
        if self.version == 1:
            if limits.memory is not None:
                _write(memory / "memory.limit_in_bytes", str(limits.memory))
                # memory and swap together: a session cannot swap its way past the limit
                if (memory / "memory.memsw.limit_in_bytes").exists():
                    _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory))
            if limits.cpus is not None:
                _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD))
                _write(cpu / "cpu.cfs_quota_us", str(limits.cpus * CPU_PERIOD))
        else:
            if limits.memory is not None:
                _write(memory / "memory.max", str(limits.memory))
                if (memory / "memory.swap.max").exists():
                    _write(memory / "memory.swap.max", "0")
            if limits.cpus is not None:
                _write(cpu / "cpu.max", f"{limits.cpus * CPU_PERIOD} {CPU_PERIOD}")
        _write(pids / "pids.max", str(limits.processes))

    def enter(self) -> None:
        """Move the calling process into this cgroup (`0`: the writer itself). A `preexec_fn`:
        it runs in the child before it execs, so nothing it starts is ever outside."""
        for fd in self._fds:
            os.write(fd, b"0")

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this cgroup for want of memory."""
        memory = self.dirs["memory"]
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            found = _OOM_KILL.search((memory / name).read_bytes())
        except OSError:
            return 0
        return int(found.group(1)) if found else 0

    def remove(self) -> None:
        """Kill what is left in the cgroup, then remove it (a failure is logged)."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        _remove(self.paths)


def _remove(paths: list[Path]) -> None:
    """Kill every process in the cgroups `paths` (one per hierarchy), then remove them."""
    deadline = time.monotonic() + _REMOVE_SECONDS
    while time.monotonic() < deadline:
        left: set[int] = set()
        for path in paths:
            with contextlib.suppress(OSError):
                left.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    for path in paths:
        try:
            path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove the session cgroup %s: %s", path, exc.strerror)


def _sweep(top: Path) -> None:
    """Remove what runners no longer running left in `top` (`<pid>/<session id>`: a runner
    killed outright cannot remove its sessions' cgroups itself)."""
    try:
        runners = [e for e in top.iterdir() if e.is_dir() and e.name.isdigit()]
    except OSError:
        return
    for runner in runners:
        if int(runner.name) == os.getpid() or Path(f"/proc/{runner.name}").exists():
            continue
        with contextlib.suppress(OSError):
            _remove([e for e in runner.iterdir() if e.is_dir()])
            runner.rmdir()


@dataclass(frozen=True)
class SessionCgroups:
    """Where a runner makes its sessions' cgroups: `hookspawn/<its pid>/` in its own cgroup of
    each hierarchy, so whatever limits the runner itself stay above every session."""

    version: int
    parents: Mapping[str, Path]

    @classmethod
    def find(cls, proc: Path = Path("/proc/self")) -> SessionCgroups:
        """This host's, checked by making (and removing) one cgroup with every limit set.
        Raises CgroupsUnavailable saying why none can be made."""
        version, own = _own_dirs(proc)
        tops = {c: path / PARENT for c, path in own.items()}
        parents = {c: path / str(os.getpid()) for c, path in tops.items()}
        try:
            if version == 2:
                # controllers reach a cgroup's children only when its parent hands them down
                enable = " ".join(f"+{c}" for c in CONTROLLERS)
                _write(own["memory"] / "cgroup.subtree_control", enable)
                for path in (tops["memory"], parents["memory"]):
                    path.mkdir(exist_ok=True)
                    _write(path / "cgroup.subtree_control", enable)
            for path in dict.fromkeys([*tops.values(), *parents.values()]):
                path.mkdir(exist_ok=True)
            for path in dict.fromkeys(tops.values()):
                _sweep(path)
            found = cls(version, parents)
            found.make(f"probe-{os.getpid()}", CgroupLimits(_MIB * 64, 1, 64)).remove()
        except OSError as exc:
            why = exc.strerror or str(exc)
            if exc.errno == errno.EBUSY and version == 2:
                why += " (the runner's own cgroup has processes: start it in a delegated cgroup)"
            where = exc.filename or next(iter(parents.values()))
            raise CgroupsUnavailable(f"cannot make a cgroup in {where}: {why}") from None
        return found

    def make(self, name: str, limits: CgroupLimits) -> SessionCgroup:
        """A new cgroup `name` (a session id) with `limits`. Raises OSError."""
        return SessionCgroup(
            self.version, {c: path / name for c, path in self.parents.items()}, limits
        )

    def describe(self) -> str:
        return ", ".join(str(p) for p in dict.fromkeys(self.parents.values()))
