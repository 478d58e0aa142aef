"""Session dispatch: into hookspawn's own store, or POSTed to HOOKSPAWN_DISPATCH_URL."""

from __future__ import annotations

import logging
import time
from typing import Protocol

import httpx

from triggers.session.spec import SessionSpec
from triggers.signature import sign
from workers import metrics
from workers.errors import DispatchUnavailable
from workers.session.records import SessionStore
from workers.tls import tls_context

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Hookspawn-Signature-256"


class Dispatcher(Protocol):
    #: dispatching only writes the session into hookspawn's own store, so a trigger's
    #: sessions can be written together with their delivery's run (`DeliveryStore.finish`)
    local: bool

    def dispatch(self, spec: SessionSpec) -> bool:
        """Create the session; True when created now, False when it already existed.

        Raises DispatchUnavailable when the target could not take it (retried later).
        """

    def abandon(self, session_id: str) -> None:
        """The session's dispatch failed for good (the delivery gave up on it): whatever was
        handed out for it alone is withdrawn."""

    def close(self) -> None:
        """Release the connections it holds (at process shutdown)."""


class EmbeddedDispatcher:
    """Sessions live in hookspawn's store (the default, no dispatch URL)."""

    local = True

    def __init__(self, sessions: SessionStore) -> None:
        self.sessions = sessions

    def dispatch(self, spec: SessionSpec) -> bool:
        return self.sessions.create(spec)

    def abandon(self, session_id: str) -> None:
        """Nothing is handed out with a session kept here."""

    def close(self) -> None:
        """Nothing of its own to release: the store's Redis client belongs to the process."""


class HttpDispatcher:
    """POST the spec with `Idempotency-Key: <session id>`; 2xx created, 409 already there.

    With a `secret`, each POST carries `X-Hookspawn-Signature-256: sha256=<hex>`, the
    HMAC-SHA256 of the exact body sent, so the target can tell it came from hookspawn.

    A few quick tries here; past them the whole delivery is retried with backoff by the task,
    always under the same key, so the target never sees two sessions for one spawn.
    """

    local = False

    def __init__(
        self,
        url: str,
        *,
        sessions: SessionStore,
        secret: str | None = None,
        timeout: float = 10.0,
        tries: int = 3,
        pause: float = 0.2,
    ) -> None:
        self.url = url
        self.sessions = sessions
        self.secret = secret or None
        self.tries = tries
        self.pause = pause
        self._client = httpx.Client(timeout=timeout, verify=tls_context())

    def dispatch(self, spec: SessionSpec) -> bool:
        body = spec.to_bytes()
        headers = {"Idempotency-Key": spec.id, "Content-Type": "application/json"}
        if self.secret is not None:
            headers[SIGNATURE_HEADER] = sign(body, self.secret)  # as GitHub signs its webhooks
        last = ""
        for attempt in range(self.tries):
            if attempt:
                metrics.inc(metrics.DISPATCH_RETRIES)
                time.sleep(self.pause * 2 ** (attempt - 1))
            try:
                response = self._client.post(self.url, content=body, headers=headers)
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

    def abandon(self, session_id: str) -> None:
        """Nothing of the session's is held here (CredentialHandover withdraws its credential)."""

    def close(self) -> None:
        self._client.close()
