"""The delivery store in Redis: durable records, dedup, the pending-work index, runs."""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import orjson
import redis
import redis.asyncio as aioredis
from redis.commands.core import AsyncScript, Script
from redis.exceptions import NoScriptError

from triggers.envelope import dump_json
from workers import keys
from workers.session_spec import SessionSpec
from workers.sessions import SESSION_RETENTION, STORE_SESSION_LUA, retention_seconds

# Record a new delivery and queue its task, or report a duplicate, in one atomic round trip.
# KEYS: record, index, pending, broker queue; ARGV: id, ttl, now, lease deadline, task
# message ('' for none), then the record's field/value pairs.
_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3] - ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
if ARGV[5] ~= '' then redis.call('LPUSH', KEYS[4], ARGV[5]) end
return 1
"""

# Claim up to ARGV[3] deliveries whose lease ran out: push their deadline to ARGV[2].
# Each sweep of the same delivery waits twice as long (lease x 2^n, n ≤ 5): a delivery that
# is only waiting behind a backlog is not queued again and again. A delivery whose attempts
# reached ARGV[5] had all it may have: it comes back in the second list (to be failed), never
# in the first (to be enqueued again). KEYS: pending, swept; ARGV: now, lease, limit, the
# record key prefix, the attempt limit.
_CLAIM_DUE = """
local now, lease, limit, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local max_attempts = tonumber(ARGV[5])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
local again, exhausted = {}, {}
for _, id in ipairs(due) do
  local n = redis.call('HINCRBY', KEYS[2], id, 1)
  redis.call('ZADD', KEYS[1], now + lease * 2 ^ math.min(n, 5), id)
  local attempts = tonumber(redis.call('HGET', prefix .. id, 'attempts') or '0')
  if attempts >= max_attempts then
    table.insert(exhausted, id)
  else
    table.insert(again, id)
  end
end
return {again, exhausted}
"""

# Take a delivery for processing in one round trip: the lock, the pending check, a fresh
# lease, the record with its body (counting the claim, and the attempt, in it), and the
# connections generation (so the pipeline reuses the connections it read before when nothing
# changed). `attempts` counts every claim since the delivery was recorded or last replayed,
# durably: across Celery retries, sweeps, re-enqueues and dead workers alike.
# KEYS: lock, pending, record, connections generation; ARGV: owner, lease ms, deadline, id.
_CLAIM = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'busy'} end
if not redis.call('ZSCORE', KEYS[2], ARGV[4]) then
  redis.call('DEL', KEYS[1])
  return {'skipped'}
end
redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[4])
local record = redis.call('HGETALL', KEYS[3])
if #record > 0 then
  redis.call('HINCRBY', KEYS[3], 'claims', 1)
  redis.call('HINCRBY', KEYS[3], 'attempts', 1)
end
return {'claimed', record, redis.call('GET', KEYS[4])}
"""

# Record a run and the delivery's new status, take it off the pending index and release
# the lock (when still ours), atomically; with the sessions the run spawned into hookspawn's
# own store, created in the same step. A session is written only if none of them exists yet
# and the record still holds its body (which each one keeps as its input): otherwise the
# script answers 0 and writes nothing at all. KEYS: record, runs, pending, swept, dead,
# lock, sessions index, then per session its key and its agent's index; ARGV: id, status,
# now, error ('' for none), run JSON, retention, owner ('' for none), session count, session
# retention, then per session its id, spec JSON (without input) and event.
_FINISH = (
    STORE_SESSION_LUA
    + """
local staged = tonumber(ARGV[8])
if staged > 0 then
  local body = redis.call('HGET', KEYS[1], 'body')
  if not body then return 0 end
  for i = 0, staged - 1 do
    if redis.call('EXISTS', KEYS[8 + 2 * i]) == 1 then return 0 end
  end
  for i = 0, staged - 1 do
    local a = 10 + 3 * i
    store_trigger_session(KEYS[8 + 2 * i], KEYS[7], KEYS[9 + 2 * i], ARGV[a], ARGV[a + 1],
                          ARGV[3], ARGV[9], ARGV[a + 2], ARGV[1], body)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'status', ARGV[2], 'processedAt', ARGV[3])
  if ARGV[4] ~= '' then
    redis.call('HSET', KEYS[1], 'error', ARGV[4])
  else
    redis.call('HDEL', KEYS[1], 'error')
  end
  redis.call('HINCRBY', KEYS[1], 'runs', 1)
  redis.call('RPUSH', KEYS[2], ARGV[5])
  redis.call('EXPIRE', KEYS[2], ARGV[6])
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if ARGV[2] == 'failed' then
  redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
  -- a dead letter whose record expired can no longer be replayed
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[3] - ARGV[6])
  redis.call('EXPIRE', KEYS[5], ARGV[6])
else
  redis.call('ZREM', KEYS[5], ARGV[1])
end
if ARGV[7] ~= '' and redis.call('GET', KEYS[6]) == ARGV[7] then redis.call('DEL', KEYS[6]) end
return 1
"""
)

# Extend a lock only while we still own it.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

QUEUED, PROCESSED, FAILED = "queued", "processed", "failed"


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class NewDelivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    installation_id: int | None
    hook_id: str | None
    body: bytes
    received_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    installation_id: int | None
    hook_id: str | None
    status: str
    received_at: float
    processed_at: float | None
    error: str | None
    runs: int
    #: claims of it by a worker so far, this one included (set by `DeliveryStore.claim`):
    #: 1 means no worker took it before, so none of its spawns can have happened yet
    claims: int = 0
    #: attempts since it was recorded or last replayed, this one included when claimed
    #: (bounded by the store's `max_attempts`)
    attempts: int = 0
    #: the connections generation when it was claimed (`keys.INSTALLATIONS_GENERATION`)
    connections_generation: bytes | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "deliveryId": self.delivery_id,
            "event": self.event,
            "action": self.action,
            "repository": self.repository,
            "installationId": self.installation_id,
            "hookId": self.hook_id,
            "status": self.status,
            "receivedAt": iso(self.received_at),
            "processedAt": iso(self.processed_at),
            "error": self.error,
            "attempts": self.attempts,
        }


def _text(raw: Mapping[bytes, bytes], name: bytes) -> str | None:
    value = raw.get(name)
    return value.decode() if value else None


def _parse(
    delivery_id: str,
    raw: Mapping[bytes, bytes],
    *,
    claimed: bool = False,
    generation: bytes | None = None,
) -> Delivery:
    """A record's fields as a Delivery; `claimed`: read by the claim that counted itself."""
    installation = _text(raw, b"installationId")
    processed = _text(raw, b"processedAt")
    return Delivery(
        delivery_id=delivery_id,
        event=_text(raw, b"event") or "",
        action=_text(raw, b"action"),
        repository=_text(raw, b"repository"),
        installation_id=int(installation) if installation else None,
        hook_id=_text(raw, b"hookId"),
        status=_text(raw, b"status") or QUEUED,
        received_at=float(_text(raw, b"receivedAt") or 0),
        processed_at=float(processed) if processed else None,
        error=_text(raw, b"error"),
        runs=int(_text(raw, b"runs") or 0),
        claims=int(_text(raw, b"claims") or 0) + (1 if claimed else 0),
        attempts=int(_text(raw, b"attempts") or 0) + (1 if claimed else 0),
        connections_generation=generation,
    )


def run_script(
    client: redis.Redis, script: Script, keys_: Sequence[str], args: Sequence[Any]
) -> Any:
    """`script(keys=keys_, args=args)`, sent straight on the connection of a single-connection
    client (a pool process's): redis-py 8 wraps each command in retries and observability hooks
    that cost as much CPU as the round trip itself, twice per delivery.

    Any error drops the connection (the next command connects again) and is raised without a
    retry: a script that may have run is not sent a second time behind the caller's back. A
    NOSCRIPT (Redis restarted without its script cache) and a pooled client go through
    `script`, which loads the script first.
    """
    conn = client.connection
    if conn is None:
        return script(keys=keys_, args=args)
    with client.single_connection_lock:
        try:
            conn.send_command(  # type: ignore[no-untyped-call]
                "EVALSHA", script.sha, len(keys_), *keys_, *args
            )
            return conn.read_response()
        except NoScriptError:
            pass
        except BaseException:
            conn.disconnect()  # type: ignore[no-untyped-call]
            raise
    return script(keys=keys_, args=args)


@dataclass(frozen=True)
class Due:
    """Deliveries whose lease ran out: to enqueue again, and those out of attempts."""

    again: list[str]
    exhausted: list[str]


class DeliveryStore:
    """Delivery records keyed by X-GitHub-Delivery, kept for `retention`.

    `max_attempts`: claims of one delivery (since it was recorded or replayed) before it is
    failed for good (`attempts_exhausted`) instead of run again.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        retention: timedelta,
        lease: float = 30.0,
        max_attempts: int = 9,
        session_retention: timedelta = SESSION_RETENTION,
    ) -> None:
        self.client = client
        self.retention_seconds = retention_seconds(retention)
        self.session_retention_seconds = retention_seconds(session_retention)
        self.lease = lease
        self.max_attempts = max_attempts
        self._record = client.register_script(_RECORD)
        self._arecord: dict[int, AsyncScript] = {}
        self._claim_due = client.register_script(_CLAIM_DUE)
        self._renew = client.register_script(_RENEW)
        self._claim = client.register_script(_CLAIM)
        self._finish = client.register_script(_FINISH)
        self._release = client.register_script(_RELEASE)

    # intake -------------------------------------------------------------------
    def record(self, new: NewDelivery, *, queue: str = "", message: bytes = b"") -> bool:
        """Store `new`, mark it pending and (with `message`) queue its task, atomically.

        False when the delivery id is already known: nothing is written then.
        """
        keys_, args = self._record_call(new, queue, message)
        return bool(self._record(keys=keys_, args=args))

    async def arecord(
        self, aclient: aioredis.Redis, new: NewDelivery, *, queue: str, message: bytes
    ) -> bool:
        """`record` on an asyncio client, for the intake's event loop."""
        keys_, args = self._record_call(new, queue, message)
        script = self._arecord.get(id(aclient))
        if script is None:  # AsyncScript loads itself again after NOSCRIPT (a Redis restart)
            script = self._arecord[id(aclient)] = aclient.register_script(_RECORD)
        return bool(await script(keys=keys_, args=args))

    def _record_call(
        self, new: NewDelivery, queue: str, message: bytes
    ) -> tuple[list[str], list[str | bytes | float | int]]:
        fields: dict[str, str | bytes] = {
            "event": new.event,
            "status": QUEUED,
            "receivedAt": repr(new.received_at),
            "body": zlib.compress(new.body, 1),
            "runs": "0",
        }
        if new.action:
            fields["action"] = new.action
        if new.repository:
            fields["repository"] = new.repository
        if new.installation_id is not None:
            fields["installationId"] = str(new.installation_id)
        if new.hook_id:
            fields["hookId"] = new.hook_id
        args: list[str | bytes | float | int] = [
            new.delivery_id,
            self.retention_seconds,
            new.received_at,
            new.received_at + self.lease,
            message,
        ]
        for name, value in fields.items():
            args += [name, value]
        keys_ = [
            keys.delivery(new.delivery_id),
            keys.DELIVERIES,
            keys.PENDING,
            queue or keys.PENDING,
        ]
        return keys_, args

    # reading ------------------------------------------------------------------
    def get(self, delivery_id: str) -> Delivery | None:
        raw = cast(dict[bytes, bytes], self.client.hgetall(keys.delivery(delivery_id)))
        if not raw:
            return None
        raw.pop(b"body", None)
        return _parse(delivery_id, raw)

    def body(self, delivery_id: str) -> bytes | None:
        packed = cast(bytes | None, self.client.hget(keys.delivery(delivery_id), "body"))
        return zlib.decompress(packed) if packed else None

    def runs(self, delivery_id: str) -> list[dict[str, Any]]:
        raw = cast(list[bytes], self.client.lrange(keys.delivery_runs(delivery_id), 0, -1))
        return [orjson.loads(r) for r in raw]

    def recent(
        self,
        *,
        event: str | None = None,
        status: str | None = None,
        repository: str | None = None,
        limit: int = 50,
    ) -> list[Delivery]:
        """Newest first, filtered; scans the index in pages so filters stay bounded."""
        found: list[Delivery] = []
        for delivery in self._newest_first():
            if event and delivery.event != event:
                continue
            if status and delivery.status != status:
                continue
            if repository and (delivery.repository or "").lower() != repository.lower():
                continue
            found.append(delivery)
            if len(found) >= limit:
                break
        return found

    def _newest_first(self, page: int = 200) -> Iterator[Delivery]:
        start = 0
        while True:
            ids = cast(list[bytes], self.client.zrevrange(keys.DELIVERIES, start, start + page - 1))
            if not ids:
                return
            pipe = self.client.pipeline(transaction=False)
            for raw_id in ids:
                pipe.hgetall(keys.delivery(raw_id.decode()))
            for raw_id, raw in zip(ids, pipe.execute(), strict=True):
                if raw:
                    raw.pop(b"body", None)
                    yield _parse(raw_id.decode(), raw)
            start += page

    # processing ---------------------------------------------------------------
    def is_pending(self, delivery_id: str) -> bool:
        return self.client.zscore(keys.PENDING, delivery_id) is not None

    def forget_pending(self, delivery_id: str) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.zrem(keys.PENDING, delivery_id)
        pipe.hdel(keys.SWEPT, delivery_id)
        pipe.execute()

    def extend_lease(self, delivery_id: str, seconds: float) -> None:
        """Push the pending deadline out (only for deliveries still pending)."""
        self.client.zadd(keys.PENDING, {delivery_id: time.time() + seconds}, xx=True)

    def claim_due(self, limit: int = 100) -> Due:
        """Deliveries whose lease ran out, each claimed for a longer lease than the last time;
        those that used every attempt apart, to be failed rather than enqueued again."""
        now = time.time()
        again, exhausted = cast(
            list[list[bytes]],
            self._claim_due(
                keys=[keys.PENDING, keys.SWEPT],
                args=[now, self.lease, limit, keys.delivery(""), self.max_attempts],
            ),
        )
        return Due([i.decode() for i in again], [i.decode() for i in exhausted])

    def renew(self, delivery_id: str, owner: str) -> bool:
        key = keys.delivery_lock(delivery_id)
        return bool(self._renew(keys=[key], args=[owner, int(self.lease * 1000)]))

    def unlock(self, delivery_id: str, owner: str) -> None:
        self._release(keys=[keys.delivery_lock(delivery_id)], args=[owner])

    def claim(self, delivery_id: str, owner: str) -> tuple[str, Delivery | None, bytes | None]:
        """Take a delivery for processing: (`claimed`, record, body), `busy` or `skipped`.

        `busy`: another worker holds it. `skipped`: it is not pending (already processed).
        A claimed delivery whose record expired comes back as (`claimed`, None, None).
        """
        answer = cast(
            list[Any],
            run_script(
                self.client,
                self._claim,
                [
                    keys.delivery_lock(delivery_id),
                    keys.PENDING,
                    keys.delivery(delivery_id),
                    keys.INSTALLATIONS_GENERATION,
                ],
                [owner, int(self.lease * 1000), time.time() + self.lease, delivery_id],
            ),
        )
        state = answer[0].decode()
        if state != "claimed" or not answer[1]:
            return state, None, None
        flat = cast(list[bytes], answer[1])
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        packed = raw.pop(b"body", None)
        generation = answer[2] if len(answer) > 2 else None
        delivery = _parse(delivery_id, raw, claimed=True, generation=generation)
        return state, delivery, zlib.decompress(packed) if packed else None

    def finish(
        self,
        delivery_id: str,
        run: dict[str, Any],
        *,
        status: str,
        error: str | None,
        owner: str = "",
        sessions: Sequence[SessionSpec] = (),
    ) -> bool:
        """Store a run and the delivery's new status, take it off the pending index and
        release the lock `owner` holds, in one atomic step.

        `sessions` (trigger-spawned from this delivery, to be stored in hookspawn's own
        store) are created in that same step, keeping the delivery's body as their input.
        False, with nothing written, when one of them exists already or the delivery's
        record is gone: the caller creates them one by one and finishes again without them.
        """
        now = time.time()
        keys_ = [
            keys.delivery(delivery_id),
            keys.delivery_runs(delivery_id),
            keys.PENDING,
            keys.SWEPT,
            keys.DEAD,
            keys.delivery_lock(delivery_id),
            keys.SESSIONS,
        ]
        args: list[str | bytes | float | int] = [
            delivery_id,
            status,
            repr(now),
            error or "",
            dump_json({**run, "finishedAt": iso(now), "status": status}),
            self.retention_seconds,
            owner,
            len(sessions),
            self.session_retention_seconds,
        ]
        for spec in sessions:
            source = spec.input_from_delivery
            if source is None or source[1] != delivery_id:
                raise ValueError(f"session {spec.id} was not spawned by delivery {delivery_id}")
            keys_ += [keys.session(spec.id), keys.agent_sessions(spec.agent)]
            args += [spec.id, spec.without_input(), source[0]]
        return bool(run_script(self.client, self._finish, keys_, args))

    def fail(self, delivery_id: str, code: str, message: str, *, owner: str = "") -> None:
        """End the delivery `failed` with `code` (a dead letter, replayable), releasing the
        lock `owner` holds."""
        run: dict[str, Any] = {
            "run": None,
            "startedAt": None,
            "outcomes": [],
            "decisions": [],
            "error": code,
            "message": message,
        }
        self.finish(delivery_id, run, status=FAILED, error=f"{code}: {message}", owner=owner)

    def requeue(self, delivery_id: str) -> bool:
        """Mark a recorded delivery for another run (replay); False when it is unknown."""
        record_key = keys.delivery(delivery_id)
        if not self.client.exists(record_key):
            return False
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(record_key, mapping={"status": QUEUED, "attempts": 0})
        pipe.zadd(keys.PENDING, {delivery_id: time.time() + self.lease})
        pipe.hdel(keys.SWEPT, delivery_id)
        pipe.execute()
        return True
