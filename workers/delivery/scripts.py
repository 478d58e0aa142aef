"""The delivery store's Lua scripts: each one step of a delivery's life, atomic in Redis."""

from __future__ import annotations

from collections.abc import Sequence

from triggers.session.spec import SessionSpec
from workers import keys
from workers.session.records import STORE_SESSION_LUA

#: what a script's ARGV holds: Redis turns each into a string
Arg = str | bytes | float | int

# Record a new delivery and queue its task, or report a duplicate (0), in one round trip.
# ARGV from the sixth on: the record's field/value pairs. The record expires after `ttl`; the
# index is trimmed to the retention by the worker's upkeep (workers/delivery/upkeep.py), not
# here.
RECORD = """
local record, index, pending, queue = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, ttl, now, deadline, message = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local fields = {unpack(ARGV, 6)}
if redis.call('EXISTS', record) == 1 then return 0 end
redis.call('HSET', record, unpack(fields))
redis.call('EXPIRE', record, ttl)
redis.call('ZADD', index, now, id)
redis.call('ZADD', pending, deadline, id)
if message ~= '' then redis.call('LPUSH', queue, message) end
return 1
"""

# Claim up to `limit` deliveries whose lease ran out: push their deadline out. Each sweep of
# the same delivery waits twice as long (lease x 2^n, n ≤ 5): a delivery that is only
# waiting behind a backlog is not queued again and again. A delivery whose attempts reached
# `max_attempts` had all it may have: it comes back in the second list (to be failed),
# never in the first (to be enqueued again). `prefix` .. id is a delivery's record key.
CLAIM_DUE = """
local pending, swept = KEYS[1], KEYS[2]
local now, lease, limit, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local max_attempts = tonumber(ARGV[5])
local due = redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, limit)
local again, exhausted = {}, {}
for _, id in ipairs(due) do
  local n = redis.call('HINCRBY', swept, id, 1)
  redis.call('ZADD', pending, now + lease * 2 ^ math.min(n, 5), id)
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
# The fresh lease is the pending check: ZADD XX CH answers 1 only for a pending delivery
# (XX never adds one); 0 also when the deadline did not move, which ZSCORE then tells apart.
# Answers {'busy'} (another owner holds the lock), {'skipped'} (not pending) or
# {'claimed', record, generation}: the record as it was before this claim counted itself.
CLAIM = """
local lock, pending, record, generation = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease_ms, deadline, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not redis.call('SET', lock, owner, 'NX', 'PX', lease_ms) then return {'busy'} end
local moved = redis.call('ZADD', pending, 'XX', 'CH', deadline, id)
if moved == 0 and not redis.call('ZSCORE', pending, id) then
  redis.call('DEL', lock)
  return {'skipped'}
end
local fields = redis.call('HGETALL', record)
if #fields > 0 then
  local claims, attempts = 0, 0
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name == 'claims' then
      claims = tonumber(fields[i + 1]) or 0
    elseif name == 'attempts' then
      attempts = tonumber(fields[i + 1]) or 0
    end
  end
  redis.call('HSET', record, 'claims', claims + 1, 'attempts', attempts + 1)
end
return {'claimed', fields, redis.call('GET', generation)}
"""

# Record a run and the delivery's new status, take it off the pending index and release
# the lock (when still ours), atomically; with the sessions the run spawned into hookspawn's
# own store, created in the same step. A session is written only if none of them exists yet
# and the record still holds its body (which each one keeps as its input): otherwise the
# script answers 0 and writes nothing at all. `finish_call` builds KEYS and ARGV: five keys
# and eight arguments, then two keys (session, agent index) and three arguments (id, spec
# JSON without input, event) per staged session, bound to the `staged` table first.
# The run is the record's field `run:<n>` (n counts the runs, 1 first), so it expires with
# the record; an empty `error` is none. The record's `event` (always recorded) tells whether
# it still exists, its `status` whether it was a dead letter (a sweep failed it while a late
# worker still ran it): a replay takes a delivery off the dead letters itself (`requeue`).
# The dead letters are trimmed to the retention by the worker's upkeep (which also drops the
# entry of a dead letter whose record expired, should GitHub deliver its id again), and the
# sweep count of a delivery no longer pending is dropped by the upkeep too, not here.
FINISH = (
    STORE_SESSION_LUA
    + """
local record, pending, dead, lock, sessions = unpack(KEYS, 1, 5)
local id, status, now, failure, run, owner = unpack(ARGV, 1, 6)
local count, session_retention = tonumber(ARGV[7]), ARGV[8]
local staged = {}
for i = 1, count do
  staged[i] = {key = KEYS[4 + 2 * i], agent_index = KEYS[5 + 2 * i],
               id = ARGV[6 + 3 * i], spec = ARGV[7 + 3 * i], event = ARGV[8 + 3 * i]}
end
local held
if #staged > 0 then
  held = redis.call('HMGET', record, 'event', 'status', 'runs', 'body')
else
  held = redis.call('HMGET', record, 'event', 'status', 'runs')
end
local recorded, previous, runs, body = held[1], held[2], held[3], held[4]
if #staged > 0 then
  if not body then return 0 end
  for _, session in ipairs(staged) do
    if redis.call('EXISTS', session.key) == 1 then return 0 end
  end
  for _, session in ipairs(staged) do
    store_trigger_session(session.key, sessions, session.agent_index, session.id, session.spec,
                          now, session_retention, session.event, id, body)
  end
end
if recorded then
  local n = (tonumber(runs) or 0) + 1
  redis.call('HSET', record, 'status', status, 'processedAt', now, 'error', failure,
             'runs', n, 'run:' .. n, run)
end
redis.call('ZREM', pending, id)
if status == 'failed' then
  redis.call('ZADD', dead, now, id)
elseif previous == 'failed' then
  redis.call('ZREM', dead, id)
end
if owner ~= '' and redis.call('GET', lock) == owner then redis.call('DEL', lock) end
return 1
"""
)

# The last run of a delivery (the record's field `run:<runs>`), or nil when it has none.
LAST_RUN = """
local record = KEYS[1]
local runs = tonumber(redis.call('HGET', record, 'runs') or '0') or 0
if runs < 1 then return false end
return redis.call('HGET', record, 'run:' .. runs)
"""

# One step of the upkeep's walk over the sweep counts: HSCAN from `cursor`, and drop the
# count of each delivery no longer pending (processed or failed: a replay counts afresh).
# Answers {next cursor, how many were dropped}.
DROP_SWEPT = """
local swept, pending = KEYS[1], KEYS[2]
local cursor, count = ARGV[1], ARGV[2]
local found = redis.call('HSCAN', swept, cursor, 'COUNT', count)
local entries = found[2]
local dropped = 0
for i = 1, #entries, 2 do
  local id = entries[i]
  if not redis.call('ZSCORE', pending, id) then
    dropped = dropped + redis.call('HDEL', swept, id)
  end
end
return {found[1], dropped}
"""

# Extend a lock only while we still own it.
RENEW = """
local lock = KEYS[1]
local owner, lease_ms = ARGV[1], ARGV[2]
if redis.call('GET', lock) == owner then return redis.call('PEXPIRE', lock, lease_ms) end
return 0
"""

# Drop a lock only while we still own it.
RELEASE = """
local lock = KEYS[1]
local owner = ARGV[1]
if redis.call('GET', lock) == owner then return redis.call('DEL', lock) end
return 0
"""


def finish_call(
    delivery_id: str,
    *,
    status: str,
    now: float,
    error: str,
    run: bytes,
    owner: str,
    sessions: Sequence[SessionSpec],
    session_retention: int,
) -> tuple[list[str], list[Arg]]:
    """FINISH's KEYS and ARGV, in the layout the script binds at its top."""
    keys_ = [
        keys.delivery(delivery_id),
        keys.PENDING,
        keys.DEAD,
        keys.delivery_lock(delivery_id),
        keys.SESSIONS,
    ]
    args: list[Arg] = [
        delivery_id,
        status,
        repr(now),
        error,
        run,
        owner,
        len(sessions),
        session_retention,
    ]
    for spec in sessions:
        source = spec.input_from_delivery
        if source is None or source[1] != delivery_id:
            raise ValueError(f"session {spec.id} was not spawned by delivery {delivery_id}")
        keys_ += [keys.session(spec.id), keys.agent_sessions(spec.agent)]
        args += [spec.id, spec.without_input(), source[0]]
    return keys_, args
