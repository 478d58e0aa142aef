"""Sessions hookspawn created or dispatched, and the spawn records that make spawning idempotent."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

import redis

from triggers.body_codec import pack, unpack
from triggers.envelope import build_envelope, session_input
from triggers.json_codec import dump_json, load_body
from triggers.session_spec import SessionSpec
from workers import keys

# Lua, shared by every script that writes sessions: store one session record (a hash whose
# first field is `spec`, the JSON spec without its input, then the given field/value pairs)
# and index it, overall and per agent. The caller has checked that it does not exist yet.
# The record expires after `ttl` seconds (HOOKSPAWN_SESSION_RETENTION); the indexes are
# trimmed to that retention by the worker's upkeep (workers/delivery/upkeep.py), not as
# they are written, and an agent's index trimmed to nothing is gone.
# A trigger-spawned session's fields are `event`, `deliveryId` and `body`: the delivery's
# recorded body (packed by triggers.body_codec), copied from its record inside Redis, which
# the input is rebuilt from; any other session's field is `input` (packed JSON), absent when
# it has none.
STORE_SESSION_LUA = """
local function store_session(key, index, agent_index, id, spec, now, ttl, ...)
  redis.call('HSET', key, 'spec', spec, ...)
  redis.call('EXPIRE', key, ttl)
  redis.call('ZADD', index, now, id)
  redis.call('ZADD', agent_index, now, id)
end
local function store_trigger_session(key, index, agent_index, id, spec, now, ttl, event,
                                     delivery, body)
  store_session(key, index, agent_index, id, spec, now, ttl,
                'event', event, 'deliveryId', delivery, 'body', body)
end
"""

# Create a session unless one with its id exists. `mode` is `delivery` (the input is the
# delivery record's body, `source` is the event) or `inline` (`source` is the packed input,
# '' for none). Answers 1 created, 0 already there, -1 the delivery is gone.
CREATE = (
    STORE_SESSION_LUA
    + """
local key, index, agent_index, delivery_record = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, spec, now, mode, source, delivery, ttl = unpack(ARGV, 1, 7)
if redis.call('EXISTS', key) == 1 then return 0 end
if mode == 'delivery' then
  local body = redis.call('HGET', delivery_record, 'body')
  if not body then return -1 end
  store_trigger_session(key, index, agent_index, id, spec, now, ttl, source, delivery, body)
elseif source ~= '' then
  store_session(key, index, agent_index, id, spec, now, ttl, 'input', source)
else
  store_session(key, index, agent_index, id, spec, now, ttl)
end
return 1
"""
)


def decode_session(record: Mapping[bytes, bytes]) -> dict[str, Any]:
    """A stored session record (the hash's fields) as the spec's JSON document."""
    spec: dict[str, Any] = load_body(record[b"spec"])
    if b"body" in record:
        delivery_id = record[b"deliveryId"].decode()
        payload = load_body(unpack(record[b"body"]))
        envelope = build_envelope(record[b"event"].decode(), delivery_id, payload)
        spec["input"] = session_input(delivery_id, envelope)
    elif b"input" in record:
        spec["input"] = load_body(unpack(record[b"input"]))
    else:
        spec["input"] = None
    return spec


#: how long sessions are kept unless told otherwise (like deliveries: HOOKSPAWN_RETENTION)
SESSION_RETENTION = timedelta(days=3)


def retention_seconds(retention: timedelta) -> int:
    return max(1, int(retention.total_seconds()))


class SessionStore:
    """Session specs by id (created at most once), listed newest first, per agent too;
    each kept for `retention` after it was created."""

    def __init__(self, client: redis.Redis, *, retention: timedelta = SESSION_RETENTION) -> None:
        self.client = client
        self.retention_seconds = retention_seconds(retention)
        self._create = client.register_script(CREATE)

    def create(self, spec: SessionSpec) -> bool:
        """Store `spec` unless a session with its id exists; True when it was created now.

        A trigger-spawned session does not carry a second copy of its event payload: the
        record keeps the delivery's compressed body (copied inside Redis) instead.
        """
        source = spec.input_from_delivery
        session_key = keys.session(spec.id)
        index_keys = [keys.SESSIONS, keys.agent_sessions(spec.agent)]
        document = spec.without_input()
        now = time.time()
        if source is not None:
            event, delivery_id = source
            created = self._create(
                keys=[session_key, *index_keys, keys.delivery(delivery_id)],
                args=[
                    spec.id,
                    document,
                    now,
                    "delivery",
                    event,
                    delivery_id,
                    self.retention_seconds,
                ],
            )
            if created != -1:
                return bool(created)
            # the delivery's record is gone (expired): keep the input itself
        packed = pack(dump_json(spec.input)) if spec.input is not None else b""
        created = self._create(
            keys=[session_key, *index_keys, session_key],
            args=[spec.id, document, now, "inline", packed, "", self.retention_seconds],
        )
        return bool(created)

    def get(self, session_id: str) -> dict[str, Any] | None:
        raw = cast(dict[bytes, bytes], self.client.hgetall(keys.session(session_id)))
        return decode_session(raw) if raw else None

    def spec(self, session_id: str) -> SessionSpec | None:
        """The stored session, parsed once into its spec (its input rebuilt as `get` does);
        None when there is none. Raises pydantic's ValidationError for a record that is not a
        session spec."""
        found = self.get(session_id)
        return None if found is None else SessionSpec.model_validate(found)

    def list(self, *, agent: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        index = keys.agent_sessions(agent) if agent else keys.SESSIONS
        ids = cast(list[bytes], self.client.zrevrange(index, 0, limit - 1))
        if not ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        for session_id in ids:
            pipe.hgetall(keys.session(session_id.decode()))
        return [decode_session(raw) for raw in pipe.execute() if raw]


class SpawnRecords:
    """What became of each spawn id: it is dispatched once its session is recorded.

    Both dispatchers record the session they created (or found already there), so the
    session record is the one proof a spawn needs no second dispatch.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def dispatched(self, spawn_id: str) -> str | None:
        """The session id when this spawn was already dispatched."""
        return spawn_id if self.client.exists(keys.session(spawn_id)) else None
