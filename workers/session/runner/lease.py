"""A running session's lease: renewed while the session runs, and how a cancel reaches it."""

from __future__ import annotations

import logging
import threading

import redis

from workers.session.runs import SessionRuns

__all__ = ["Heartbeat"]

#: the runner's logger: a renewal failure is reported under the name it always had
log = logging.getLogger("workers.session.runner.run")


class Heartbeat:
    """Renews the session's lease while it runs; notices a cancel (or the loss of the
    session to the sweep), which stops the running command."""

    def __init__(self, runs: SessionRuns, session_id: str, owner: str, lease: float) -> None:
        self.runs, self.session_id, self.owner, self.lease = runs, session_id, owner, lease
        self.stop_asked = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="session-lease")

    def _loop(self) -> None:
        interval = min(0.25, self.lease / 4)
        while not self._done.wait(interval):
            try:
                cancel = self.runs.renew(self.session_id, self.owner, self.lease)
            except redis.RedisError as exc:
                log.warning("session %s: lease renewal failed: %s", self.session_id, exc)
                continue
            if cancel is None or cancel:
                self.stop_asked.set()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)
