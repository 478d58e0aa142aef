"""A session's resource limits as the runner applies them: a cgroup per session (the
environment's `resources`, HOOKSPAWN_SESSION_MAX_PROCESSES) around setup and the harness, and
HOOKSPAWN_SESSION_DISK_LIMIT on the session root from setup on (its commands, the harness's,
any confined command) and before a snapshot."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from triggers.session.spec import SessionSpec
from workers.errors import SessionFailed
from workers.session.runner.cgroup import (
    CgroupLimits,
    CgroupsUnavailable,
    SessionCgroup,
    SessionCgroups,
)
from workers.session.runner.disk_usage import DiskWatch, format_size
from workers.session.status import SessionStatus
from workers.settings import Settings

__all__ = ["RunnerLimits", "SessionLimits", "open_session_cgroups"]

log = logging.getLogger(__name__)


def open_session_cgroups(
    proc: Path = Path("/proc/self"),
) -> SessionCgroups | CgroupsUnavailable:
    """Where sessions' cgroups are made, found once at the runner's start, or why none can be
    (logged once here; sessions then run without, and each one's log says so)."""
    try:
        found = SessionCgroups.find(proc)
    except CgroupsUnavailable as exc:
        log.warning(
            "no cgroup per session, so environment resources (memoryMB, cpuCount) and "
            "HOOKSPAWN_SESSION_MAX_PROCESSES are not enforced: %s",
            exc,
        )
        return exc
    log.info(
        "a cgroup per session (cgroup v%d) under %s: environment resources and "
        "HOOKSPAWN_SESSION_MAX_PROCESSES enforced on setup and harness",
        found.version,
        found.describe(),
    )
    return found


class RunnerLimits:
    """The runner's side: its settings and where session cgroups go."""

    def __init__(
        self, settings: Settings, cgroups: SessionCgroups | CgroupsUnavailable | None = None
    ) -> None:
        self.settings = settings
        self.cgroups = open_session_cgroups() if cgroups is None else cgroups

    def session(
        self,
        session: SessionSpec,
        workspace: Path,
        *,
        stop: Callable[[], bool],
        note: Callable[[str], None],
    ) -> SessionLimits:
        return SessionLimits(self, session, workspace, stop=stop, note=note)


class SessionLimits:
    """One session's: its cgroup, made with the setup phase (or the first confined command)
    and removed at its end; the disk watch on its root from the setup phase (or the first
    confined command) to its end, so every setup entry and the harness are measured while they
    run. `stop`: whether the session was asked to stop; `note`: a line in the session's log."""

    def __init__(
        self,
        runner: RunnerLimits,
        session: SessionSpec,
        workspace: Path,
        *,
        stop: Callable[[], bool],
        note: Callable[[str], None],
    ) -> None:
        self.runner, self.session, self.stop, self.note = runner, session, stop, note
        self.disk = DiskWatch(workspace, runner.settings.session_disk_limit)
        self.cgroup: SessionCgroup | None = None
        self._opened = False
        self._watching = False
        self._status = ""
        self._oom_kills = 0

    @property
    def limits(self) -> CgroupLimits:
        resources = self.session.environment.spec.resources
        return CgroupLimits.of(resources, self.runner.settings.session_max_processes)

    def _open(self) -> None:
        if self._opened:
            return
        self._opened = True
        cgroups = self.runner.cgroups
        if isinstance(cgroups, CgroupsUnavailable):
            self.note(f"no cgroup, resources not enforced: {cgroups}")
            return
        limits = self.limits
        try:
            self.cgroup = cgroups.make(self.session.id, limits)
        except OSError as exc:
            self.note(f"no cgroup, resources not enforced: {exc.filename}: {exc.strerror}")
            log.warning("session %s: no cgroup: %s", self.session.id, exc)
            return
        self.note(f"cgroup: {limits.describe()}")

    def phase(self, status: str) -> None:
        """The session entered `status`: setup makes the cgroup and starts the disk watch,
        which runs until the session ends (the harness included)."""
        self._status = status
        if status == SessionStatus.SETUP:
            self._open()
            self._watch()

    def _watch(self) -> None:
        if not self._watching:
            self._watching = True
            self.disk.start()

    def preexec(self, confined: bool) -> Callable[[], None] | None:
        """What a command's child runs before it execs: a confined one enters the cgroup,
        and the disk watch runs from then on whatever the phase. None starts past the disk
        limit."""
        self._raise_past_disk_limit()
        if not confined:
            return None
        self._open()
        self._watch()
        return None if self.cgroup is None else self.cgroup.enter

    def cancel(self) -> bool:
        """Whether the running command must be stopped: a stop asked, or the disk limit."""
        return self.stop() or self.disk.exceeded is not None

    def ended(self) -> None:
        """After every command: a kill for want of memory is noted; the disk limit passed
        (once the watch runs, the root is measured once more) fails the session."""
        if self.cgroup is not None:
            kills = self.cgroup.oom_kills()
            if kills > self._oom_kills:
                self.note(
                    f"memory limit reached ({self.limits.describe()}): the kernel killed "
                    f"{kills - self._oom_kills} process(es)"
                )
                self._oom_kills = kills
        if self._watching:
            self.disk.check()
        self._raise_past_disk_limit()

    def check_disk(self) -> None:
        """Before a snapshot is saved: fails the session past the disk limit."""
        self.disk.check()
        self._raise_past_disk_limit()

    def _raise_past_disk_limit(self) -> None:
        used = self.disk.exceeded
        if used is not None:
            limit = self.runner.settings.session_disk_limit
            during = "; no snapshot was saved" if self._status == SessionStatus.SETUP else ""
            raise SessionFailed(
                f"the session root held {format_size(used)}, past "
                f"HOOKSPAWN_SESSION_DISK_LIMIT ({format_size(limit)}){during}",
                code="disk_limit_exceeded",
            )

    def close(self) -> None:
        """The session ended: the disk watch stops, the cgroup goes with what is left in it."""
        self.disk.stop()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
