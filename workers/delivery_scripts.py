"""The delivery store's Lua scripts: each one step of a delivery's life, atomic in Redis."""

from __future__ import annotations

from workers.sessions import STORE_SESSION_LUA

# Record a new delivery and queue its task, or report a duplicate, in one atomic round trip.
# KEYS: record, index, pending, broker queue; ARGV: id, ttl, now, lease deadline, task
# message ('' for none), then the record's field/value pairs.
RECORD = """
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
CLAIM_DUE = """
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
CLAIM = """
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
FINISH = (
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
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
