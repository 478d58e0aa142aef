"""The session side's stores over one Redis client, built once per process."""

from __future__ import annotations

import redis

from workers.session.audit import SessionAudit
from workers.session.credentials import SessionCredentials
from workers.session.records import SessionStore
from workers.session.runs import SessionRuns
from workers.settings import Settings

__all__ = ["SessionStores"]


class SessionStores:
    """Session records, their audit, session credentials and run records, sharing `client`."""

    def __init__(self, client: redis.Redis, settings: Settings) -> None:
        self.client = client
        self.sessions = SessionStore(
            client, retention=settings.sessions_kept, ack=settings.replica_ack
        )
        self.audit = SessionAudit(client, retention=settings.sessions_kept)
        self.credentials = SessionCredentials(
            client, ttl=settings.session_credential_ttl, audit=self.audit
        )
        self.runs = SessionRuns(client, credential_ttl=settings.session_credential_ttl)

    def close(self) -> None:
        self.client.close()
