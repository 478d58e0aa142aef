"""The broker's audit trail per session: every credential and tool decision, never a token.

Failed authentications are not decisions: they are counted per session (how many, the latest
time), never appended, so a flood of wrong credentials cannot push real entries out of the
bounded trail, and past `FAILURE_LIMIT` in `FAILURE_WINDOW` they are refused
(too_many_failures). The limit is keyed on the session, not the client address: every sandbox
reaches the broker from loopback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

import redis

from triggers.timestamps import now_iso
from workers import keys, metrics
from workers.session.records import SESSION_RETENTION, retention_seconds

__all__ = ["AUDIT_LIMIT", "FAILURE_LIMIT", "FAILURE_WINDOW", "SessionAudit"]

#: entries kept per session (the newest); older ones are dropped
AUDIT_LIMIT = 200

#: failed authentications against one session answered 401 per window; later ones, 429
FAILURE_LIMIT = 20

#: seconds of the failed-authentication window
FAILURE_WINDOW = 60

# Count one failed authentication: the total and its time, and the current window's count.
# KEYS: failures hash, window counter; ARGV: now (ISO), retention (s), window (s)
# Returns {failures in this window, seconds left in the window}.
_FAILED = """
local failures, window = KEYS[1], KEYS[2]
local now, retention, span = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('HINCRBY', failures, 'count', 1)
redis.call('HSET', failures, 'lastAt', now)
redis.call('EXPIRE', failures, retention)
local in_window = redis.call('INCR', window)
if in_window == 1 then redis.call('EXPIRE', window, span) end
local left = redis.call('TTL', window)
if left < 0 then
  redis.call('EXPIRE', window, span)
  left = span
end
return {in_window, left}
"""

#: the only fields an entry may have: nothing else (and never a token) reaches the record
_FIELDS = (
    "kind",
    "result",
    "code",
    "repository",
    "mountPath",
    "tool",
    "method",
    "permissions",
    "message",
)


class SessionAudit:
    """A bounded list per session, newest first, counted in `hookspawn_credentials_total`;
    kept `retention` (the sessions' retention) after its last entry."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        limit: int = AUDIT_LIMIT,
        retention: timedelta = SESSION_RETENTION,
        failure_limit: int = FAILURE_LIMIT,
        failure_window: int = FAILURE_WINDOW,
    ) -> None:
        self.client = client
        self.limit = limit
        self.ttl = retention_seconds(retention)
        self.failure_limit = failure_limit
        self.failure_window = failure_window
        self._failed = client.register_script(_FAILED)

    def record(self, session_id: str, kind: str, result: str, **fields: Any) -> dict[str, Any]:
        """Record one decision (`kind`: git, tool or session; `result`: allowed or denied)."""
        entry: dict[str, Any] = {
            "at": now_iso(),
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

    def failed_authentication(self, session_id: str, kind: str) -> int | None:
        """Count one failed authentication against the session (`kind`: what was asked, git
        or tool, as `hookspawn_credentials_total` counts it); None while it is within the
        limit, else the seconds until the window ends (the refusal's `retryAfter`)."""
        now = now_iso()
        in_window, left = cast(
            list[int],
            self._failed(
                keys=[keys.session_auth_failures(session_id), keys.session_auth_window(session_id)],
                args=[now, self.ttl, self.failure_window],
            ),
        )
        metrics.inc(metrics.CREDENTIALS, kind, "denied")
        return None if int(in_window) <= self.failure_limit else max(int(left), 1)

    def failures(self, session_id: str) -> dict[str, Any]:
        """`{count, lastAt}`: failed authentications against the session (count 0: none)."""
        raw = cast(dict[bytes, bytes], self.client.hgetall(keys.session_auth_failures(session_id)))
        last = raw.get(b"lastAt")
        return {"count": int(raw.get(b"count", b"0")), "lastAt": last.decode() if last else None}
