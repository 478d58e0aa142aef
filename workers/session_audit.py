"""The broker's audit trail per session: every credential and tool decision, never a token."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import redis

from workers import keys, metrics
from workers.sessions import SESSION_RETENTION, retention_seconds

__all__ = ["AUDIT_LIMIT", "SessionAudit"]

#: entries kept per session (the newest); older ones are dropped
AUDIT_LIMIT = 200

#: the only fields an entry may have: nothing else (and never a token) reaches the record
_FIELDS = ("kind", "result", "code", "repository", "mountPath", "tool", "permissions", "message")


class SessionAudit:
    """A bounded list per session, newest first, counted in `hookspawn_credentials_total`;
    kept `retention` (the sessions' retention) after its last entry."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        limit: int = AUDIT_LIMIT,
        retention: timedelta = SESSION_RETENTION,
    ) -> None:
        self.client = client
        self.limit = limit
        self.ttl = retention_seconds(retention)

    def record(self, session_id: str, kind: str, result: str, **fields: Any) -> dict[str, Any]:
        """Record one decision (`kind`: git, tool or session; `result`: allowed or denied)."""
        entry: dict[str, Any] = {
            "at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "kind": kind,
            "result": result,
        }
        entry.update({k: v for k, v in fields.items() if k in _FIELDS and v is not None})
        key = keys.session_audit(session_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(key, json.dumps(entry, sort_keys=True))
        pipe.ltrim(key, 0, self.limit - 1)
        pipe.expire(key, self.ttl)
        pipe.execute()
        metrics.inc(metrics.CREDENTIALS, kind, result)
        return entry

    def entries(self, session_id: str) -> list[dict[str, Any]]:
        raw = cast(list[bytes], self.client.lrange(keys.session_audit(session_id), 0, -1))
        out: list[dict[str, Any]] = []
        for item in raw:
            loaded = json.loads(item)
            if isinstance(loaded, Mapping):
                out.append(dict(loaded))
        return out
