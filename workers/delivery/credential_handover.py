"""Handing a session its broker credential: inside the spec POSTed to the dispatch target.

Wraps the HTTP dispatcher. Each dispatch of a spec with `broker` carries a fresh credential
(workers/session/credentials.py says why): kept alone when the target took it (created),
withdrawn when the target already had the session (409), kept when the try failed, until
the delivery gives up on the spawn (`abandon`): then every one of them is withdrawn.
"""

from __future__ import annotations

from triggers.session.spec import SessionSpec
from workers.delivery.dispatch import Dispatcher
from workers.errors import DispatchUnavailable
from workers.session.credentials import SessionCredentials

__all__ = ["CredentialHandover"]


class CredentialHandover:
    """A Dispatcher that adds the session credential to the spec it hands over."""

    def __init__(self, inner: Dispatcher, credentials: SessionCredentials) -> None:
        self.inner = inner
        self.credentials = credentials
        self.local = inner.local

    def dispatch(self, spec: SessionSpec) -> bool:
        if spec.broker is None:
            return self.inner.dispatch(spec)
        issued = self.credentials.issue(spec.id)
        try:
            created = self.inner.dispatch(spec.with_credential(issued.value))
        except DispatchUnavailable:
            raise  # the target may have taken it: the credential stays valid
        if created:
            self.credentials.keep_only(spec.id, issued.value)
        else:
            self.credentials.withdraw(spec.id, issued.value)
        return created

    def abandon(self, session_id: str) -> None:
        """The spawn's dispatch failed for good: every credential a try carried is withdrawn
        (the session is not marked ended: a replay dispatches it afresh, with a new one)."""
        self.credentials.withdraw_all(session_id)
        self.inner.abandon(session_id)

    def close(self) -> None:
        self.inner.close()
