"""Session credentials: the sandbox's key to the broker, kept in Redis only as sha256 hashes.

A credential is random (`secrets.token_urlsafe`), handed over once inside the dispatched spec,
and never stored, logged or put into a stored spec in plain. A session may hold a few valid
hashes at once, because an HTTP dispatch can be tried more than once for one spawn and the
answer of an earlier try may have been lost (the dispatch target keeps the spec of the first
try it took and answers 409 to later ones). So each try carries a fresh credential whose hash
is added before the POST; a 2xx keeps only that one (the target took this try), a 409 drops
it (the target kept an earlier one, which stays valid), a failed try keeps it (the target may
have taken it). Once the session is recorded, no spawn path dispatches it again, so no further
credential is made. `POST /sessions/{id}/end` deletes them all, and so does every script that
writes a session's final status (workers/session/runs.py, through END_CREDENTIALS_LUA), in the
same script. The credentials' key never outlives the session record.

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

__all__ = [
    "CREDENTIAL_TTL",
    "END_CREDENTIALS_LUA",
    "IssuedCredential",
    "SessionCredentials",
    "credential_hash",
    "end_keys",
    "lifetime_ms",
]

# Add one hash and keep the key alive as long as its longest-lived hash, never past the
# session record (a credential never outlives its session). KEYS: credentials, session record;
# ARGV: hash, expiry (epoch seconds), ttl (seconds), now (epoch seconds). Answers the expiry.
_ADD = """
local key, record = KEYS[1], KEYS[2]
local digest, expiry, ttl, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]) * 1000, ARGV[4]
local kept = redis.call('PTTL', record)
if kept >= 0 and kept < ttl then
  ttl = math.max(kept, 1)
  expiry = math.min(expiry, tonumber(now) + ttl / 1000)
end
redis.call('HSET', key, digest, tostring(expiry))
if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
return tostring(expiry)
"""

# Keep only one hash (the try the dispatch target took), when it is still there; the key
# expires no later than the session record. KEYS: credentials, session record; ARGV: hash
_KEEP_ONLY = """
local key, record, digest = KEYS[1], KEYS[2], ARGV[1]
local expiry = redis.call('HGET', key, digest)
if not expiry then return 0 end
local ttl = redis.call('PTTL', key)
local kept = redis.call('PTTL', record)
if kept >= 0 and (ttl < 0 or kept < ttl) then ttl = math.max(kept, 1) end
redis.call('DEL', key)
redis.call('HSET', key, digest, expiry)
if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
return 1
"""

#: Lua, for every script that ends a session (`POST /end`'s, and each that writes a run's
#: terminal status, workers/session/runs.py): revoke every credential of the session and mark it
#: ended for as long as its record is kept (never shorter than the credential lifetime, so a
#: record gone early still ends what it issued), in the same script as the ending itself.
#: Answers how many credentials there were.
END_CREDENTIALS_LUA = """
local function end_credentials(credentials, ended, record, lifetime)
  local count = redis.call('HLEN', credentials)
  redis.call('DEL', credentials)
  local kept = redis.call('PTTL', record)
  if kept == -1 then
    redis.call('SET', ended, '1')
  else
    redis.call('SET', ended, '1', 'PX', math.max(kept, lifetime))
  end
  return count
end
"""

# KEYS: credentials, ended mark, session record; ARGV: the credential lifetime (ms)
_END = (
    END_CREDENTIALS_LUA
    + """
local credentials, ended, record = KEYS[1], KEYS[2], KEYS[3]
local lifetime = tonumber(ARGV[1])
return end_credentials(credentials, ended, record, lifetime)
"""
)


def end_keys(session_id: str) -> list[str]:
    """The keys END_CREDENTIALS_LUA's `end_credentials` takes, in its order."""
    return [
        keys.session_credentials(session_id),
        keys.session_ended(session_id),
        keys.session(session_id),
    ]


def lifetime_ms(ttl: timedelta) -> int:
    """END_CREDENTIALS_LUA's `lifetime`: the credential lifetime in ms (at least a second)."""
    return max(int(ttl.total_seconds() * 1000), 1000)


#: HOOKSPAWN_SESSION_CREDENTIAL_TTL's default
CREDENTIAL_TTL = timedelta(hours=24)


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
        ttl: timedelta = CREDENTIAL_TTL,
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
        now = self._clock()
        ttl = max(int(self.ttl.total_seconds()), 1)
        expiry = self._add(
            keys=[keys.session_credentials(session_id), keys.session(session_id)],
            args=[credential_hash(value), repr(now + ttl), ttl, repr(now)],
        )
        return IssuedCredential(value, datetime.fromtimestamp(float(expiry), UTC))

    def keep_only(self, session_id: str, credential: str) -> bool:
        """The dispatch target took the try carrying `credential`: the others go."""
        kept = bool(
            self._keep_only(
                keys=[keys.session_credentials(session_id), keys.session(session_id)],
                args=[credential_hash(credential)],
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

    def withdraw_all(self, session_id: str) -> int:
        """Every try's credential goes (its dispatch failed for good), the session not marked
        ended: a later dispatch of it may issue a fresh one. How many there were."""
        key = keys.session_credentials(session_id)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hlen(key)
            pipe.delete(key)
            count, _ = pipe.execute()
        return int(count)

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
        return int(self._end(keys=end_keys(session_id), args=[lifetime_ms(self.ttl)]))
