"""The index upkeep: the indexes of deliveries, dead letters and sessions trimmed to their
retention, off the delivery path.

Records expire by themselves (each is written with its TTL); the sorted sets that list them
are not trimmed as they are written (that cost three commands per write): the worker's
sweeper thread runs this every `interval` instead, so an index holds an entry at most
`interval` past its retention. Each pass drops the entries older than the retention from
`hookspawn:deliveries` and `hookspawn:dead` (the delivery retention), `hookspawn:sessions`
and the per-agent session indexes (the session retention). The per-agent indexes are found
with SCAN, a bounded number of steps per pass, the cursor kept in Redis between passes (so
every index is reached however many of them, whichever process runs the pass); an index
trimmed to nothing is gone. The sweep counts (`hookspawn:swept`) of deliveries no longer
pending are dropped the same way (HSCAN, bounded, the cursor kept in Redis): finishing a
delivery leaves its count to this. A short lock lets one process run a pass per interval
however many workers run; a pass is idempotent anyway.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import cast

import redis

from workers import keys
from workers.delivery.scripts import DROP_SWEPT

#: the longest time between two passes (shorter when a retention is short: a hundredth of it)
MAX_INTERVAL = 60.0
#: keys SCAN looks at per step, and steps per pass: 20,000 keys of the database per pass
SCAN_COUNT = 1000
SCAN_STEPS = 20


def upkeep_interval(retention_seconds: int, session_retention_seconds: int) -> float:
    """Seconds between passes: a minute, or a hundredth of the shorter retention."""
    return max(1.0, min(MAX_INTERVAL, min(retention_seconds, session_retention_seconds) / 100))


class IndexUpkeep:
    """Trims the delivery, dead-letter and session indexes to their retention."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        retention_seconds: int,
        session_retention_seconds: int,
        scan_count: int = SCAN_COUNT,
        scan_steps: int = SCAN_STEPS,
    ) -> None:
        self.client = client
        self.retention_seconds = retention_seconds
        self.session_retention_seconds = session_retention_seconds
        self.interval = upkeep_interval(retention_seconds, session_retention_seconds)
        self.scan_count = scan_count
        self.scan_steps = scan_steps
        self._drop_swept = client.register_script(DROP_SWEPT)

    def run_if_due(self) -> bool:
        """One pass, unless another process ran one less than `interval` ago (True: ran)."""
        lock_ms = max(1, int(self.interval * 1000))
        if not self.client.set(keys.UPKEEP_LOCK, "1", nx=True, px=lock_ms):
            return False
        self.run_once()
        return True

    def run_once(self, now: float | None = None) -> int:
        """Trim every index once (the per-agent ones and the sweep counts as far as this
        pass's SCAN steps reach); the number of entries dropped."""
        now = time.time() if now is None else now
        deliveries_before = now - self.retention_seconds
        sessions_before = now - self.session_retention_seconds
        dropped = self._trim(
            [
                (keys.DELIVERIES, deliveries_before),
                (keys.DEAD, deliveries_before),
                (keys.SESSIONS, sessions_before),
            ]
        )

        def agent_indexes(cursor: int) -> tuple[int, int]:
            cursor, found = cast(
                tuple[int, list[bytes]],
                self.client.scan(
                    cursor, match=keys.AGENT_SESSIONS_PATTERN, count=self.scan_count, _type="zset"
                ),
            )
            return cursor, self._trim([(index, sessions_before) for index in found])

        def sweep_counts(cursor: int) -> tuple[int, int]:
            answer = cast(
                list[bytes | int],
                self._drop_swept(keys=[keys.SWEPT, keys.PENDING], args=[cursor, self.scan_count]),
            )
            return int(answer[0]), int(answer[1])

        dropped += self._walk(keys.UPKEEP_CURSOR, agent_indexes)
        return dropped + self._walk(keys.UPKEEP_SWEPT_CURSOR, sweep_counts)

    def _trim(self, indexes: Sequence[tuple[str | bytes, float]]) -> int:
        """Drop the entries scored before each index's time, in one round trip."""
        if not indexes:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for index, before in indexes:
            pipe.zremrangebyscore(index, "-inf", before)
            # an index written with a TTL (before the upkeep) must not expire whole
            pipe.persist(index)
        return sum(cast(list[int], pipe.execute())[::2])

    def _walk(self, cursor_key: str, step: Callable[[int], tuple[int, int]]) -> int:
        """Up to `scan_steps` of `step(cursor) -> (next cursor, dropped)`, from the cursor
        kept at `cursor_key` and keeping where it stopped there (none once a walk is done:
        the next one starts over, and no key is left behind)."""
        cursor, dropped = int(cast(bytes | None, self.client.get(cursor_key)) or 0), 0
        for _ in range(self.scan_steps):
            cursor, more = step(cursor)
            dropped += more
            if cursor == 0:
                break
        if cursor:
            self.client.set(cursor_key, cursor)
        else:
            self.client.delete(cursor_key)
        return dropped
