"""The runner's stop (SIGTERM): it says what it does, gives its sessions a grace, then stops
them and records each `failed runner_stopped` before the process exits."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

from workers.errors import SessionFailed
from workers.session.runner.lease import Heartbeat

__all__ = ["RUNNER_STOPPED", "RunnerStop"]

log = logging.getLogger(__name__)

#: the failure code of a session its runner stopped
RUNNER_STOPPED = "runner_stopped"


class RunnerStop:
    """The sessions this runner holds, and its stop: `begin` (from the shutdown signal) says at
    once how many run and how long they may take, waits up to `grace` seconds for them to end
    on their own, then asks each to stop (its run ends it `failed runner_stopped`). Once begun,
    no session is taken any more (it stays queued, for a runner that is not stopping)."""

    def __init__(self, grace: float, out: TextIO | None = None) -> None:
        self.grace = grace
        self.out = out
        self.stopping = threading.Event()
        self._held: dict[str, Heartbeat] = {}
        self._stopped: set[str] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._stopper: threading.Thread | None = None

    @contextlib.contextmanager
    def holding(self, session_id: str, beat: Heartbeat) -> Iterator[None]:
        with self._lock:
            self._held[session_id] = beat
            if session_id in self._stopped:
                beat.stop_asked.set()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(session_id, None)
                self._idle.notify_all()

    @contextlib.contextmanager
    def ending(self, session_id: str) -> Iterator[None]:
        """Whatever ends the run of a session the stop stopped (its command killed, cancelled
        or failing) is SessionFailed `runner_stopped`."""
        try:
            yield
        except Exception:
            if not self.stopped(session_id):
                raise
            raise SessionFailed(
                f"the runner was stopped (SIGTERM) and the session ran past its {self.grace:g} s "
                "grace (HOOKSPAWN_RUNNER_STOP_GRACE)",
                code=RUNNER_STOPPED,
            ) from None

    def stopped(self, session_id: str) -> bool:
        """Whether the stop ended this session (its run records `runner_stopped`)."""
        with self._lock:
            return session_id in self._stopped

    def begin(self, *, cold: bool = False) -> None:
        """Start stopping (once); returns at once, the waiting is done on a thread of its own.
        `cold`: no grace."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        self._stopper = threading.Thread(
            target=self._stop, args=(0.0 if cold else self.grace,), daemon=True, name="runner-stop"
        )
        self._stopper.start()

    def said(self, timeout: float = 5.0) -> None:
        """Wait (up to `timeout`) for the stop to have said how it ended: called before the
        process exits, which would otherwise end the stop's thread before its last line when
        the sessions end just then."""
        if self._stopper is not None:
            self._stopper.join(timeout)

    def _say(self, text: str) -> None:
        log.warning("%s", text)
        out = self.out or sys.stderr
        with contextlib.suppress(OSError, ValueError):
            out.write(f"hookspawn runner: {text}\n")
            out.flush()

    def _stop(self, grace: float) -> None:
        with self._lock:
            count = len(self._held)
        if not count:
            self._say("stopping: no session running")
            return
        self._say(
            f"stopping: {count} session{'s' if count != 1 else ''} running, waiting up to "
            f"{grace:g} s"
        )
        with self._lock:
            self._idle.wait_for(lambda: not self._held, timeout=grace)
            left = dict(self._held)
            self._stopped.update(left)
        if not left:
            self._say("stopping: every session ended within the grace")
            return
        self._say(
            f"stopping: {len(left)} session{'s' if len(left) != 1 else ''} still running after "
            f"{grace:g} s: stopped, failed {RUNNER_STOPPED} ({', '.join(sorted(left))})"
        )
        for beat in left.values():
            beat.stop_asked.set()
