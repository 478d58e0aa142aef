"""Session dispatch (SPEC §9): into hookspawn's own store, or POSTed to HOOKSPAWN_DISPATCH_URL."""

from __future__ import annotations

import logging
import time
from typing import Protocol

import httpx

from workers import metrics
from workers.errors import DispatchUnavailable
from workers.session_spec import SessionSpec
from workers.sessions import SessionStore

log = logging.getLogger(__name__)


class Dispatcher(Protocol):
    #: dispatching only writes the session into hookspawn's own store, so a trigger's
    #: sessions can be written together with their delivery's run (`DeliveryStore.finish`)
    local: bool

    def dispatch(self, spec: SessionSpec) -> bool:
        """Create the session; True when created now, False when it already existed.

        Raises DispatchUnavailable when the target could not take it (retried later).
        """


class EmbeddedDispatcher:
    """Sessions live in hookspawn's store (the default, no dispatch URL)."""

    local = True

    def __init__(self, sessions: SessionStore) -> None:
        self.sessions = sessions

    def dispatch(self, spec: SessionSpec) -> bool:
        return self.sessions.create(spec)


class HttpDispatcher:
    """POST the spec with `Idempotency-Key: <session id>`; 2xx created, 409 already there.

    A few quick tries here; past them the whole delivery is retried with backoff by the task,
    always under the same key, so the target never sees two sessions for one spawn.
    """

    local = False

    def __init__(
        self,
        url: str,
        *,
        sessions: SessionStore,
        timeout: float = 10.0,
        tries: int = 3,
        pause: float = 0.2,
    ) -> None:
        self.url = url
        self.sessions = sessions
        self.tries = tries
        self.pause = pause
        self.retries = 0  # for metrics: answers that had to be tried again
        self._client = httpx.Client(timeout=timeout)

    def dispatch(self, spec: SessionSpec) -> bool:
        body = spec.to_bytes()
        last = ""
        for attempt in range(self.tries):
            if attempt:
                self.retries += 1
                metrics.inc(metrics.DISPATCH_RETRIES)
                time.sleep(self.pause * 2 ** (attempt - 1))
            try:
                response = self._client.post(
                    self.url,
                    content=body,
                    headers={"Idempotency-Key": spec.id, "Content-Type": "application/json"},
                )
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 409 or response.is_success:
                # keep what we dispatched, for listing and agent-to-agent depth
                self.sessions.create(spec)
                return response.status_code != 409
            last = f"HTTP {response.status_code}"
        log.warning("dispatch of session %s failed: %s", spec.id, last)
        raise DispatchUnavailable(
            f"dispatch target {self.url} did not take session {spec.id}: {last}", sessionId=spec.id
        )

    def close(self) -> None:
        self._client.close()
