"""A locally run session's lifecycle in Redis: status, failure, lease, cancel."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import redis
from pydantic import Field

from triggers.session.spec import SessionSpec
from triggers.timestamps import now_iso
from workers import keys
from workers.session.credentials import (
    CREDENTIAL_TTL,
    END_CREDENTIALS_LUA,
    end_keys,
    lifetime_ms,
)
from workers.session.run_record import (
    Failure,
    HarnessUsage,
    HarnessView,
    SessionRun,
    parse_run,
)
from workers.session.status import ACTIVE, TERMINAL, SessionStatus, lua_is, lua_literal

__all__ = ["ACTIVE", "TERMINAL", "RunnerCounts", "SessionRuns", "SessionWithRun"]

# the scripts below name statuses only through these (their text is built from the enum)
_QUEUED = lua_literal(SessionStatus.QUEUED)
_STAGING = lua_literal(SessionStatus.STAGING)
_CANCELLED = lua_literal(SessionStatus.CANCELLED)
_FAILED = lua_literal(SessionStatus.FAILED)

# Every script that writes a terminal status (advance, cancel of a queued session, the lost
# runner's sweep) ends the session's credentials in the same script (`end_credentials`,
# workers/session/credentials.py): the broker refuses them from the moment the status is
# written. When live credentials were found there (nobody ended the session at its broker,
# which would have revoked its GitHub tokens too), the session is put on the list of sessions
# whose tokens the web still has to revoke (keys.SESSIONS_UNREVOKED, kept an hour: no token
# lives longer). `_ENDED` below does both; its keys (`_ended_keys`) follow the run's own in
# each script, bound to locals of the same names.
_ENDED = (
    END_CREDENTIALS_LUA
    + """
local function ended(credentials, mark, record, unrevoked, id, epoch, lifetime)
  local count = end_credentials(credentials, mark, record, lifetime)
  if count > 0 then
    redis.call('ZADD', unrevoked, epoch, id)
    redis.call('ZREMRANGEBYSCORE', unrevoked, '-inf', tonumber(epoch) - 3600)
  end
  return count
end
"""
)

# A run record is kept as long as its session (`ttl`, HOOKSPAWN_SESSION_RETENTION): it
# expires `ttl` after it was queued, or after it ended when a runner took it (a held session
# never expires under its runner).

# Record a session as queued unless it has a run record. KEYS: run, queued index; ARGV:
# workspace, now (ISO), now (epoch), session id, ttl (seconds). Answers the status it has now.
_QUEUE = f"""
local run, queued = KEYS[1], KEYS[2]
local workspace, now, epoch, id, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('HSETNX', run, 'status', {_QUEUED}) == 1 then
  redis.call('HSET', run, 'workspace', workspace, 'queuedAt', now, 'ttl', ttl)
  redis.call('EXPIRE', run, ttl)
  redis.call('ZADD', queued, epoch, id)
end
return redis.call('HGET', run, 'status')
"""

# A runner takes a queued session. KEYS: run, leases, queued index; ARGV: owner, lease
# deadline, now, session id, the session root on the runner's host ('': the one recorded when
# it was queued stands). Answers 1 when taken, 0 when it is not queued (taken already, ended,
# or cancelled).
_CLAIM = f"""
local run, leases, queued = KEYS[1], KEYS[2], KEYS[3]
local owner, deadline, now, id, workspace = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('HGET', run, 'status') ~= {_QUEUED} then return 0 end
redis.call('HSET', run, 'status', {_STAGING}, 'owner', owner, 'stagingAt', now)
if workspace ~= '' then redis.call('HSET', run, 'workspace', workspace) end
redis.call('PERSIST', run)
redis.call('ZADD', leases, deadline, id)
redis.call('ZREM', queued, id)
return 1
"""

# The holder moves its session on. KEYS: run, leases, then `_ENDED`'s; ARGV: owner, status,
# now, failure JSON (''), session id, now (epoch), the credential lifetime (ms). Answers 1 when
# moved, 0 when the session is no longer the owner's to move (ended by the sweep or by a
# cancel, which ended its credentials then).
_ADVANCE = (
    _ENDED
    + f"""
local run, leases = KEYS[1], KEYS[2]
local owner, status, now, failure, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local epoch, lifetime = ARGV[6], tonumber(ARGV[7])
local credentials, mark, record, unrevoked = KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local current = redis.call('HGET', run, 'status')
if redis.call('HGET', run, 'owner') ~= owner then return 0 end
if {lua_is("current", TERMINAL)} then return 0 end
redis.call('HSET', run, 'status', status, status .. 'At', now)
if {lua_is("status", TERMINAL)} then
  redis.call('HSET', run, 'endedAt', now)
  if failure ~= '' then redis.call('HSET', run, 'failure', failure) end
  redis.call('ZREM', leases, id)
  local ttl = redis.call('HGET', run, 'ttl')
  if ttl then redis.call('EXPIRE', run, ttl) end
  ended(credentials, mark, record, unrevoked, id, epoch, lifetime)
end
return 1
"""
)

# The holder renews its lease. KEYS: run, leases; ARGV: owner, deadline, session id.
# Answers the cancel flag ('1' or '0'), or -1 when the session is no longer the owner's.
_RENEW = f"""
local run, leases, owner, deadline, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local current = redis.call('HGET', run, 'status')
if redis.call('HGET', run, 'owner') ~= owner then return -1 end
if {lua_is("current", TERMINAL)} then return -1 end
redis.call('ZADD', leases, deadline, id)
return redis.call('HGET', run, 'cancel') or '0'
"""

# The holder records its setup snapshot. KEYS: run; ARGV: owner, then field/value pairs (of
# SNAPSHOT_FIELDS). Answers 1 when recorded, 0 when the session is no longer the owner's.
_SNAPSHOT = """
local run, owner = KEYS[1], ARGV[1]
if redis.call('HGET', run, 'owner') ~= owner then return 0 end
for i = 2, #ARGV, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  redis.call('HSET', run, field, value)
end
return 1
"""

#: the run record's setup snapshot fields, as the API shows them
SNAPSHOT_FIELDS = ("snapshotKey", "snapshotScope", "snapshot")
#: the run record's harness fields: `harness` (shown as `harnessRun`) and `usage` are JSON
#: objects, `result` text
HARNESS_FIELDS = ("harness", "result", "usage")

# Cancel. KEYS: run, queued index, then `_ENDED`'s; ARGV: now, session id, now (epoch), the
# credential lifetime (ms). A queued session ends `cancelled` at once (its credentials with it);
# an active one is flagged for its runner, which kills what runs and ends it.
# Answers the status it has now ('' when the session has no run record).
_CANCEL = (
    _ENDED
    + f"""
local run, queued, now, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local epoch, lifetime = ARGV[3], tonumber(ARGV[4])
local credentials, mark, record, unrevoked = KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local current = redis.call('HGET', run, 'status')
if not current then return '' end
if current == {_QUEUED} then
  redis.call('HSET', run, 'status', {_CANCELLED}, 'cancelledAt', now, 'endedAt', now)
  redis.call('ZREM', queued, id)
  ended(credentials, mark, record, unrevoked, id, epoch, lifetime)
  return {_CANCELLED}
end
if {lua_is("current", ACTIVE)} then
  redis.call('HSET', run, 'cancel', '1')
end
return current
"""
)

# Fail one session whose lease ran out. KEYS: run, leases, then `_ENDED`'s; ARGV: session id,
# now (epoch, for the deadline check), now (ISO), failure JSON, the credential lifetime (ms).
# Answers 1 when failed now.
_LOST = (
    _ENDED
    + f"""
local run, leases, id, epoch, now, failure = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lifetime = tonumber(ARGV[5])
local credentials, mark, record, unrevoked = KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local deadline = redis.call('ZSCORE', leases, id)
if not deadline or tonumber(deadline) > tonumber(epoch) then return 0 end
redis.call('ZREM', leases, id)
local current = redis.call('HGET', run, 'status')
if not {lua_is("current", ACTIVE)} then return 0 end
redis.call('HSET', run, 'status', {_FAILED}, 'failedAt', now, 'endedAt', now, 'failure', failure)
local ttl = redis.call('HGET', run, 'ttl')
if ttl then redis.call('EXPIRE', run, ttl) end
ended(credentials, mark, record, unrevoked, id, epoch, lifetime)
return 1
"""
)


class SessionWithRun(SessionSpec):
    """A session as GET /sessions/{id} answers it: the spec, and with HOOKSPAWN_RUNNER=local
    how its run stands."""

    # the spec's harness name, until a runner ran (or skipped) it: then how it ran
    harness: str | HarnessView = Field(  # type: ignore[assignment]
        description="the harness the agent names (claude-code, codex); once a local runner has "
        "started or skipped it, an object: its name, its version, and why it was skipped"
    )
    status: str | None = Field(
        None, description="queued, staging, setup, running, succeeded, failed or cancelled"
    )
    failure: Failure | None = None
    workspace: str | None = Field(
        None,
        description="the session root on the host of the runner that took it (until one "
        "did, where a runner on the host that queued it would put it)",
    )
    snapshot_key: str | None = Field(
        None, description="the setup snapshot's key, once setup has computed it"
    )
    snapshot_scope: str | None = Field(
        None,
        description="the scope of the snapshot restored or saved (branch:OWNER/NAME@BRANCH, "
        "pull:OWNER/NAME#N, ref:OWNER/NAME@REF); before either, the one it would save into",
    )
    snapshot: str | None = Field(None, description="restored, saved or missed")
    harness_run: HarnessView | None = Field(
        None,
        description="the harness as it ran: its name and version, or why it was skipped "
        "(`harness` is the one the agent names)",
    )
    result: str | None = Field(None, description="the harness's final answer (at most 16 KB)")
    usage: HarnessUsage | None = Field(None, description="what the harness reported using")
    log_tail: str | None = None
    times: dict[str, str] | None = Field(None, description="when it entered each status")


@dataclass(frozen=True, slots=True)
class RunnerCounts:
    """The local runners' queues as they stand: sessions waiting for a runner, run messages
    not yet taken, sessions held under a live lease and those whose lease ran out."""

    queued: int
    messages: int
    running: int
    overdue: int


_LOST_FAILURE = json.dumps(
    {
        "code": "runner_lost",
        "message": "the runner holding this session stopped (killed or lost) before the "
        "session ended",
    }
)


def _now() -> str:
    return now_iso("milliseconds")


def _ended_keys(session_id: str) -> list[str]:
    return [*end_keys(session_id), keys.SESSIONS_UNREVOKED]


class SessionRuns:
    """Run records by session id; transitions are checked inside Redis (one script each)."""

    def __init__(self, client: redis.Redis, *, credential_ttl: timedelta = CREDENTIAL_TTL) -> None:
        """`credential_ttl`: HOOKSPAWN_SESSION_CREDENTIAL_TTL (how long an ended session's mark
        is kept at least, as `SessionCredentials.revoke` keeps it)."""
        self.client = client
        self._lifetime = lifetime_ms(credential_ttl)
        self._queue = client.register_script(_QUEUE)
        self._claim = client.register_script(_CLAIM)
        self._advance = client.register_script(_ADVANCE)
        self._renew = client.register_script(_RENEW)
        self._cancel = client.register_script(_CANCEL)
        self._snapshot = client.register_script(_SNAPSHOT)
        self._lost = client.register_script(_LOST)

    def queue(self, session_id: str, *, workspace: str, ttl: int) -> str:
        """Record the session as queued (once), kept `ttl` seconds (as its session is); its
        status now."""
        status = self._queue(
            keys=[keys.session_run(session_id), keys.RUNNER_QUEUED],
            args=[workspace, _now(), time.time(), session_id, ttl],
        )
        return cast(bytes, status).decode()

    def claim(self, session_id: str, owner: str, lease: float, *, workspace: str = "") -> bool:
        """Take the session for `owner` while it is queued; `workspace`: where its root is on
        the taking runner's host (each runner has its own, which whoever queued it cannot
        know); whether it was taken."""
        return bool(
            self._claim(
                keys=[keys.session_run(session_id), keys.RUNNER_LEASES, keys.RUNNER_QUEUED],
                args=[owner, time.time() + lease, _now(), session_id, workspace],
            )
        )

    def advance(
        self, session_id: str, owner: str, status: str, failure: dict[str, str] | None = None
    ) -> bool:
        return bool(
            self._advance(
                keys=[keys.session_run(session_id), keys.RUNNER_LEASES, *_ended_keys(session_id)],
                args=[
                    owner,
                    status,
                    _now(),
                    json.dumps(failure) if failure else "",
                    session_id,
                    time.time(),
                    self._lifetime,
                ],
            )
        )

    def note_snapshot(self, session_id: str, owner: str, **fields: str) -> bool:
        """Record the setup snapshot's fields (SNAPSHOT_FIELDS) while the session is the
        owner's; whether it was."""
        unknown = set(fields) - set(SNAPSHOT_FIELDS)
        if unknown:
            raise ValueError(f"not a snapshot field of the run record: {sorted(unknown)}")
        pairs = [item for pair in fields.items() for item in pair]
        return bool(self._snapshot(keys=[keys.session_run(session_id)], args=[owner, *pairs]))

    def note_harness(
        self,
        session_id: str,
        owner: str,
        *,
        harness: Mapping[str, Any],
        result: str | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record what the harness was (`{"name", "version"}`, or `"skipped"` and why), its
        final answer and what it used, while the session is the owner's; whether it was."""
        pairs = ["harness", json.dumps(dict(harness))]
        if result is not None:
            pairs += ["result", result]
        if usage is not None:
            pairs += ["usage", json.dumps(dict(usage))]
        return bool(self._snapshot(keys=[keys.session_run(session_id)], args=[owner, *pairs]))

    def renew(self, session_id: str, owner: str, lease: float) -> bool | None:
        """Extend the lease; whether a cancel was asked (None: the session is not ours now)."""
        answer = self._renew(
            keys=[keys.session_run(session_id), keys.RUNNER_LEASES],
            args=[owner, time.time() + lease, session_id],
        )
        if answer == -1:
            return None
        return bytes(answer) == b"1"

    def cancel(self, session_id: str) -> str | None:
        """Ask to cancel; the status now (None: the session is not run by a local runner)."""
        answer = cast(
            bytes,
            self._cancel(
                keys=[keys.session_run(session_id), keys.RUNNER_QUEUED, *_ended_keys(session_id)],
                args=[_now(), session_id, time.time(), self._lifetime],
            ),
        )
        return answer.decode() or None

    def waiting_since(self, seconds: float) -> list[str]:
        """Sessions still queued `seconds` after they were queued (or last handed out here):
        their run message may be lost (a crash between storing and queuing it), so the caller
        queues them again; each is counted as handed out now. A duplicate message is harmless:
        a runner takes a session only while it is queued."""
        now = time.time()
        found = cast(
            list[bytes], self.client.zrangebyscore(keys.RUNNER_QUEUED, "-inf", now - seconds)
        )
        ids = [raw.decode() for raw in found]
        pipe = self.client.pipeline(transaction=False)
        for session_id in ids:
            pipe.exists(keys.session_run(session_id))
        kept = [i for i, present in zip(ids, pipe.execute(), strict=True) if present]
        gone = [i for i in ids if i not in kept]
        if gone:  # expired while queued (no runner took it within the retention)
            self.client.zrem(keys.RUNNER_QUEUED, *gone)
        if kept:
            self.client.zadd(keys.RUNNER_QUEUED, {session_id: now for session_id in kept}, xx=True)
        return kept

    def sweep_lost(self) -> list[str]:
        """Fail (`runner_lost`) every session whose runner stopped renewing its lease."""
        expired = cast(
            list[bytes], self.client.zrangebyscore(keys.RUNNER_LEASES, "-inf", time.time())
        )
        return [raw.decode() for raw in expired if self.settle(raw.decode())]

    def settle(self, session_id: str) -> bool:
        """Fail the session `runner_lost` when its lease has run out; True when it did now.
        (Reading a session settles it too, so one is never left `running` for want of a
        runner to sweep.)"""
        return bool(
            self._lost(
                keys=[keys.session_run(session_id), keys.RUNNER_LEASES, *_ended_keys(session_id)],
                args=[session_id, time.time(), _now(), _LOST_FAILURE, self._lifetime],
            )
        )

    def get(self, session_id: str) -> SessionRun | None:
        """The run record (status, failure, workspace, the snapshot's key, scope and outcome,
        the harness run, times); None when the session is not run by a local runner."""
        raw = cast(dict[bytes, bytes], self.client.hgetall(keys.session_run(session_id)))
        return parse_run(session_id, raw) if raw else None

    def views(self, session_ids: list[str]) -> dict[str, SessionRun]:
        """`get` for many sessions in one round trip; those with no run record left out."""
        pipe = self.client.pipeline(transaction=False)
        for session_id in session_ids:
            pipe.hgetall(keys.session_run(session_id))
        return {
            session_id: parse_run(session_id, raw)
            for session_id, raw in zip(session_ids, pipe.execute(), strict=True)
            if raw
        }

    def counts(self, now: float | None = None) -> RunnerCounts:
        """How the local runners' queues stand at `now` (epoch seconds; now by default)."""
        now = time.time() if now is None else now
        pipe = self.client.pipeline(transaction=False)
        pipe.llen(keys.SESSIONS_QUEUE)
        pipe.zcard(keys.RUNNER_QUEUED)
        pipe.zcard(keys.RUNNER_LEASES)
        pipe.zcount(keys.RUNNER_LEASES, "-inf", now)
        messages, queued, leased, overdue = pipe.execute()
        return RunnerCounts(
            queued=int(queued),
            messages=int(messages),
            running=int(leased) - int(overdue),
            overdue=int(overdue),
        )
