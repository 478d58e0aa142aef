"""The runner's session credentials: one issued as a run starts, given up as it ends.

As each run ends (whatever its outcome), before its final status is written, the runner ends
the session at the broker with the session's own credential (`POST {broker url}/end`), which
revokes the session's credentials and its GitHub tokens at GitHub; then it revokes the
credentials in Redis itself, so a broker the runner cannot reach still leaves the session
ended (its tokens then die at their expiry). The script writing the final status revokes them
too (workers/session/runs.py), which is all a runner killed outright leaves to its sweep.
"""

from __future__ import annotations

import logging
import threading

import httpx

from workers.errors import SessionEnded
from workers.session.credentials import SessionCredentials
from workers.session.records import SessionStore, StoredSession
from workers.tls import tls_context

__all__ = ["END_TIMEOUT", "RunCredentials"]

log = logging.getLogger(__name__)

#: seconds the broker may take to end a session (it revokes each of its tokens at GitHub)
END_TIMEOUT = 30.0


class RunCredentials:
    """`issue` for SessionRunner, `end` as its run returns; credentials in memory only."""

    def __init__(
        self,
        credentials: SessionCredentials,
        sessions: SessionStore,
        *,
        timeout: float = END_TIMEOUT,
    ) -> None:
        self.credentials = credentials
        self.sessions = sessions
        self.timeout = timeout
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}

    def issue(self, session_id: str) -> str | None:
        """A session credential for the run, or None for a session ended before it ran (its
        githubApp mounts then fail their auth preflight, `git_auth_failed`)."""
        try:
            value = self.credentials.issue(session_id).value
        except SessionEnded:
            return None
        with self._lock:
            self._held[session_id] = value
        return value

    def end(self, session_id: str) -> None:
        """The run is over: end the session at its broker, then revoke its credentials here.
        Never raises: a run's end is recorded whatever this manages."""
        with self._lock:
            held = self._held.pop(session_id, None)
        try:
            url = _broker_url(self.sessions.get(session_id)) if held is not None else None
            if held is not None and url is not None:
                self._end_at_broker(session_id, url, held)
            self.credentials.revoke(session_id)
        except Exception:
            log.exception("session %s: its credentials could not be revoked at its end", session_id)

    def _end_at_broker(self, session_id: str, url: str, credential: str) -> None:
        try:
            answer = httpx.post(
                f"{url.rstrip('/')}/end",
                headers={"Authorization": f"Bearer {credential}"},
                timeout=self.timeout,
                verify=tls_context(),
            )
        except httpx.HTTPError as exc:
            log.warning(
                "session %s: the broker at %s could not be reached to end it (%s: %s); its "
                "credentials are revoked here, its GitHub tokens expire on their own",
                session_id,
                url,
                type(exc).__name__,
                exc,
            )
            return
        if answer.status_code == 401:  # already ended (an admin's /end, say)
            return
        if not answer.is_success:
            log.warning(
                "session %s: the broker answered %s to ending it: %s",
                session_id,
                answer.status_code,
                answer.text[:200],
            )


def _broker_url(session: StoredSession | None) -> str | None:
    broker = session.spec.broker if session is not None else None
    url = broker.url if broker is not None else None
    return url if url is not None and url.startswith(("http://", "https://")) else None
