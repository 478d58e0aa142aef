"""Session credentials: the sandbox's key to the broker, kept in Redis only as sha256 hashes.

A credential is random (`secrets.token_urlsafe`), handed over once inside the dispatched spec,
and never stored, logged or put into a stored spec in plain. A session may hold a few valid
hashes at once, because an HTTP dispatch can be tried more than once for one spawn and the
answer of an earlier try may have been lost (the dispatch target keeps the spec of the first
try it took and answers 409 to later ones). So each try carries a fresh credential whose hash
is added before the POST; a 2xx keeps only that one (the target took this try), a 409 drops
it (the target kept an earlier one, which stays valid), a failed try keeps it (the target may
have taken it). Once the session is recorded, no spawn path dispatches it again, so no further
credential is made. `POST /sessions/{id}/end` deletes them all, and so does the runner as a
run ends.

A session kept in hookspawn's own store (no dispatch URL) is handed to nobody at dispatch:
whatever starts it (a runner) calls `issue` and passes the credential into the sandbox.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import cast

import redis

from workers import keys
from workers.errors import SessionEnded
from workers.session.audit import SessionAudit

__all__ = ["IssuedCredential", "SessionCredentials", "credential_hash"]

# Add one hash and keep the key alive as long as its longest-lived hash.
# KEYS: credentials; ARGV: hash, expiry (epoch seconds), ttl (seconds)
_ADD = """
local key, digest, expiry, ttl = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
redis.call('HSET', key, digest, expiry)
if redis.call('TTL', key) < ttl then redis.call('EXPIRE', key, ttl) end
return 1
"""

# Keep only one hash (the try the dispatch target took), when it is still there.
# KEYS: credentials; ARGV: hash
_KEEP_ONLY = """
local key, digest = KEYS[1], ARGV[1]
local expiry = redis.call('HGET', key, digest)
if not expiry then return 0 end
local ttl = redis.call('PTTL', key)
redis.call('DEL', key)
redis.call('HSET', key, digest, expiry)
if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
return 1
"""


# Revoke every credential and mark the session ended for as long as its record is kept (never
# shorter than the credential lifetime, so a record gone early still ends what it issued).
# KEYS: credentials, ended mark, session record; ARGV: the credential lifetime (ms)
_END = """
local credentials, ended, record = KEYS[1], KEYS[2], KEYS[3]
local lifetime = tonumber(ARGV[1])
local count = redis.call('HLEN', credentials)
redis.call('DEL', credentials)
local kept = redis.call('PTTL', record)
if kept == -1 then
  redis.call('SET', ended, '1')
else
  redis.call('SET', ended, '1', 'PX', math.max(kept, lifetime))
end
return count
"""


def credential_hash(credential: str) -> str:
    return hashlib.sha256(credential.encode()).hexdigest()


class IssuedCredential:
    """A credential just made; `value` stays out of the repr."""

    def __init__(self, value: str, expires_at: datetime) -> None:
        self.value = value
        self.expires_at = expires_at

    def __repr__(self) -> str:
        return f"IssuedCredential(expires_at={self.expires_at.isoformat()})"


class SessionCredentials:
    """Issue, check and revoke session credentials (hashes only, with their expiry)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        ttl: timedelta = timedelta(hours=24),
        clock: Callable[[], float] = time.time,
        audit: SessionAudit | None = None,
    ) -> None:
        self.client = client
        self.audit = audit
        self.ttl = ttl
        self._clock = clock
        self._add = client.register_script(_ADD)
        self._keep_only = client.register_script(_KEEP_ONLY)
        self._end = client.register_script(_END)

    def issue(self, session_id: str) -> IssuedCredential:
        """A fresh credential for the session, valid from now on; earlier ones stay valid.
        Raises SessionEnded for a session `revoke` ended."""
        if self.client.exists(keys.session_ended(session_id)):
            raise SessionEnded(f"session {session_id} was ended: it gets no new credential")
        value = secrets.token_urlsafe(32)
        expiry = self._clock() + self.ttl.total_seconds()
        ttl = max(int(self.ttl.total_seconds()), 1)
        self._add(
            keys=[keys.session_credentials(session_id)],
            args=[credential_hash(value), repr(expiry), ttl],
        )
        return IssuedCredential(value, datetime.fromtimestamp(expiry, UTC))

    def keep_only(self, session_id: str, credential: str) -> bool:
        """The dispatch target took the try carrying `credential`: the others go."""
        kept = bool(
            self._keep_only(
                keys=[keys.session_credentials(session_id)], args=[credential_hash(credential)]
            )
        )
        if kept and self.audit is not None:
            self.audit.record(
                session_id, "session", "allowed", message="session credential handed over"
            )
        return kept

    def withdraw(self, session_id: str, credential: str) -> None:
        """The dispatch target refused the try carrying `credential` (409): nobody holds it."""
        self.client.hdel(keys.session_credentials(session_id), credential_hash(credential))

    def verify(self, session_id: str, credential: str) -> bool:
        """Whether `credential` is a valid, unexpired, unrevoked credential of the session."""
        if not credential:
            return False
        digest = credential_hash(credential)
        stored = cast(dict[bytes, bytes], self.client.hgetall(keys.session_credentials(session_id)))
        now = self._clock()
        valid = False
        for known, expiry in stored.items():
            # compare every entry in constant time; no early exit on a match
            if hmac.compare_digest(known, digest.encode()) and float(expiry) > now:
                valid = True
        return valid

    def revoke(self, session_id: str) -> int:
        """Revoke every credential of the session, and issue none for it from now on (as long
        as the session record is kept); returns how many there were."""
        lifetime = max(int(self.ttl.total_seconds() * 1000), 1000)
        return int(
            self._end(
                keys=[
                    keys.session_credentials(session_id),
                    keys.session_ended(session_id),
                    keys.session(session_id),
                ],
                args=[lifetime],
            )
        )
