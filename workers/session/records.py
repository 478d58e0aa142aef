"""Sessions hookspawn created or dispatched, and the spawn records that make spawning idempotent.

A stored session is read here and nowhere else: `SessionStore.get` and `list` answer a
`StoredSession` (the spec, its creation time, how a local runner runs it), parsed from the
record by `parse_session`; past it, nothing reads a session's JSON.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import redis
from pydantic import ValidationError

from triggers.body_codec import pack, unpack
from triggers.envelope import build_envelope, session_input
from triggers.json_codec import dump_json, load_body
from triggers.session.spec import SessionSpec
from triggers.timestamps import parse_iso
from workers import keys
from workers.errors import SessionRecordInvalid
from workers.redis_connection import run_replicated
from workers.redis_target import NO_ACK, ReplicaAck
from workers.session.run_record import SessionRun, parse_run
from workers.session.status import SessionStatus

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


def _document(record: Mapping[bytes, bytes]) -> dict[str, Any]:
    """A stored session record (the hash's fields) as the spec's JSON document, its input
    rebuilt (from the delivery's recorded body for a trigger-spawned session)."""
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


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session as stored: its spec (the input rebuilt), when it was created, and how a local
    runner runs it (`run`; None when none does: HOOKSPAWN_RUNNER=dispatch, or not yet queued)."""

    spec: SessionSpec
    created_at: datetime
    run: SessionRun | None = None

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def agent(self) -> str:
        return self.spec.agent

    @property
    def status(self) -> SessionStatus | None:
        """Its run's status; None when no local runner runs it."""
        return self.run.status if self.run is not None else None

    @property
    def ended_at(self) -> datetime | None:
        return self.run.ended_at if self.run is not None else None

    @property
    def updated_at(self) -> datetime:
        """When it last moved: its run's latest time, else its creation."""
        moved = self.run.updated_at if self.run is not None else None
        return max(moved, self.created_at) if moved is not None else self.created_at

    def spec_json(self) -> dict[str, Any]:
        """The spec as stored and dispatched (JSON values; no broker credential, which is
        never kept)."""
        return self.spec.model_dump(mode="json", by_alias=True, exclude={"broker": {"credential"}})

    def to_json(self) -> dict[str, Any]:
        """The session as the API answers it: the spec, and the run's fields over it."""
        return {**self.spec_json(), **(self.run.to_json() if self.run is not None else {})}


def _upgrade(document: dict[str, Any]) -> dict[str, Any]:
    """A spec stored before its present shape, in it: `requester` was a bare login."""
    requester = document.get("requester")
    if isinstance(requester, str):
        document["requester"] = {"login": requester, "id": None}
    return document


def parse_session(
    session_id: str, record: Mapping[bytes, bytes], run: Mapping[bytes, bytes] | None = None
) -> StoredSession:
    """A session record (and its run record's fields, when it has one) as a StoredSession;
    SessionRecordInvalid, naming the session and where, for one that does not read as one."""
    try:
        spec = SessionSpec.model_validate(_upgrade(_document(record)))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SessionRecordInvalid(
            f"session {session_id}: the stored session is not a session spec: "
            f"{where}: {first['msg']}",
            sessionId=session_id,
            field=where,
        ) from exc
    except (KeyError, ValueError) as exc:
        raise SessionRecordInvalid(
            f"session {session_id}: the stored record does not read as a session "
            f"({type(exc).__name__}: {exc})",
            sessionId=session_id,
        ) from exc
    try:
        created_at = parse_iso(spec.created_at)
    except ValueError as exc:
        raise SessionRecordInvalid(
            f"session {session_id}: its createdAt {spec.created_at!r} is not an ISO 8601 time",
            sessionId=session_id,
            field="createdAt",
        ) from exc
    return StoredSession(spec, created_at, parse_run(session_id, run) if run else None)


#: how long sessions are kept unless told otherwise (like deliveries: HOOKSPAWN_RETENTION)
SESSION_RETENTION = timedelta(days=3)


def retention_seconds(retention: timedelta) -> int:
    return max(1, int(retention.total_seconds()))


class SessionStore:
    """Session specs by id (created at most once), listed newest first, per agent too;
    each kept for `retention` after it was created."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        retention: timedelta = SESSION_RETENTION,
        ack: ReplicaAck = NO_ACK,
    ) -> None:
        """`ack`: the replicas a created session (a spawn's dispatch mark) must reach before
        `create` answers (StoreNotReplicated otherwise: the session stands on the primary)."""
        self.client = client
        self.retention_seconds = retention_seconds(retention)
        self.ack = ack
        self._create_script = client.register_script(CREATE)

    def _create(self, *, keys: list[str], args: list[Any]) -> Any:
        if self.ack.replicas:
            what = f"session {args[0]}"
            return run_replicated(self.client, self._create_script, keys, args, self.ack, what)
        return self._create_script(keys=keys, args=args)

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

    def exists(self, session_id: str) -> bool:
        """Whether a session with this id is stored (its record is not read)."""
        return bool(self.client.exists(keys.session(session_id)))

    def get(self, session_id: str) -> StoredSession | None:
        """The stored session with its run record, in one round trip; None when there is none.
        SessionRecordInvalid for a record that does not read as a session."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(keys.session(session_id))
        pipe.hgetall(keys.session_run(session_id))
        raw, run = cast(list[dict[bytes, bytes]], pipe.execute())
        return parse_session(session_id, raw, run) if raw else None

    def ids(self, *, agent: str | None = None, limit: int = 100) -> list[str]:
        """The ids of the newest `limit` sessions (of `agent`), newest first; no record read."""
        index = keys.agent_sessions(agent) if agent else keys.SESSIONS
        return [
            raw.decode() for raw in cast(list[bytes], self.client.zrevrange(index, 0, limit - 1))
        ]

    def list(
        self, *, agent: str | None = None, limit: int = 100, status: SessionStatus | None = None
    ) -> list[StoredSession]:
        """The newest `limit` sessions (of `agent`) with their run records, newest first, in two
        round trips; those expired since they were indexed left out. With `status`, only those
        of them whose run has it (the others' specs are not read)."""
        ids = self.ids(agent=agent, limit=limit)
        if not ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        for session_id in ids:
            pipe.hgetall(keys.session(session_id))
            pipe.hgetall(keys.session_run(session_id))
        found = cast(list[dict[bytes, bytes]], pipe.execute())
        listed = []
        for session_id, raw, run in zip(ids, found[::2], found[1::2], strict=True):
            if not raw:
                continue
            if status is not None and (not run or parse_run(session_id, run).status != status):
                continue
            listed.append(parse_session(session_id, raw, run))
        return listed


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
