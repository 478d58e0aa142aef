"""Sessions hookspawn created or dispatched, and the spawn records that make spawning idempotent."""

from __future__ import annotations

import time
import zlib
from typing import Any, cast

import redis

from triggers.envelope import load_body
from workers import keys
from workers.session_spec import SessionSpec

# Create a session unless one with its id exists, and index it, atomically.
# KEYS: session, index, agent index; ARGV: id, spec JSON, now
_CREATE = """
if not redis.call('SET', KEYS[1], ARGV[2], 'NX') then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
return 1
"""


def decode_session(raw: bytes) -> dict[str, Any]:
    """A stored session record (zlib-compressed JSON) as a dict."""
    loaded: dict[str, Any] = load_body(zlib.decompress(raw))
    return loaded


class SessionStore:
    """Session specs by id (created at most once), listed newest first, per agent too."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._create = client.register_script(_CREATE)

    def create(self, spec: SessionSpec) -> bool:
        """Store `spec` unless a session with its id exists; True when it was created now."""
        created = self._create(
            keys=[keys.session(spec.id), keys.SESSIONS, keys.agent_sessions(spec.agent)],
            # compressed: a spec carries the whole event payload in its input
            args=[spec.id, zlib.compress(spec.to_bytes(), 1), time.time()],
        )
        return bool(created)

    def get(self, session_id: str) -> dict[str, Any] | None:
        raw = cast(bytes | None, self.client.get(keys.session(session_id)))
        return decode_session(raw) if raw else None

    def list(self, *, agent: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        index = keys.agent_sessions(agent) if agent else keys.SESSIONS
        ids = cast(list[bytes], self.client.zrevrange(index, 0, limit - 1))
        if not ids:
            return []
        raws = cast(list[bytes | None], self.client.mget([keys.session(i.decode()) for i in ids]))
        return [decode_session(r) for r in raws if r]


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
