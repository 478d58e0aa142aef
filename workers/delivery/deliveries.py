"""The delivery store in Redis: durable records, dedup, the pending-work index, runs."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import orjson
import redis
import redis.asyncio as aioredis
from redis.commands.core import AsyncScript, Script
from redis.exceptions import NoScriptError

from triggers.body_codec import pack, unpack
from triggers.json_codec import dump_json
from triggers.session.spec import SessionSpec
from workers import keys
from workers.delivery.record import FAILED, QUEUED, Delivery, NewDelivery, iso, parse_record
from workers.delivery.scripts import (
    CLAIM,
    CLAIM_DUE,
    FINISH,
    LAST_RUN,
    RECORD,
    RELEASE,
    RENEW,
    Arg,
    finish_call,
)
from workers.redis_connection import run_replicated
from workers.redis_target import NO_ACK, ReplicaAck
from workers.session.records import SESSION_RETENTION, retention_seconds


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


#: the record's fields a Delivery is read from: neither its body nor its runs
RECORD_FIELDS = (
    "event",
    "action",
    "repository",
    "installationId",
    "hookId",
    "status",
    "receivedAt",
    "processedAt",
    "error",
    "runs",
    "claims",
    "attempts",
)


def _fields(values: Sequence[bytes | None]) -> dict[bytes, bytes]:
    """An HMGET of RECORD_FIELDS as the record's present fields (empty: no record)."""
    return {
        name.encode(): value
        for name, value in zip(RECORD_FIELDS, values, strict=True)
        if value is not None
    }


@dataclass(frozen=True)
class Due:
    """Deliveries whose lease ran out: to enqueue again, and those out of attempts."""

    again: list[str]
    exhausted: list[str]


class DeliveryStore:
    """Delivery records keyed by X-GitHub-Delivery, kept for `retention`.

    `max_attempts`: claims of one delivery (since it was recorded or replayed) before it is
    failed for good (`attempts_exhausted`) instead of run again. `ack`: the replicas a
    delivery's record, and a run's staged sessions (its dispatch marks), must reach before
    the write counts (StoreNotReplicated otherwise).
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        retention: timedelta,
        lease: float = 30.0,
        max_attempts: int = 9,
        session_retention: timedelta = SESSION_RETENTION,
        ack: ReplicaAck = NO_ACK,
    ) -> None:
        self.client = client
        self.ack = ack
        self.retention_seconds = retention_seconds(retention)
        self.session_retention_seconds = retention_seconds(session_retention)
        self.lease = lease
        self.max_attempts = max_attempts
        self._record = client.register_script(RECORD)
        self._arecord: dict[int, AsyncScript] = {}
        self._claim_due = client.register_script(CLAIM_DUE)
        self._renew = client.register_script(RENEW)
        self._claim = client.register_script(CLAIM)
        self._finish = client.register_script(FINISH)
        self._release = client.register_script(RELEASE)
        self._last_run = client.register_script(LAST_RUN)

    # intake -------------------------------------------------------------------
    def record(self, new: NewDelivery, *, queue: str = "", message: bytes = b"") -> bool:
        """Store `new`, mark it pending and (with `message`) queue its task, atomically.

        False when the delivery id is already known: nothing is written then.
        """
        keys_, args = self.record_call(new, queue=queue, message=message)
        if self.ack.replicas:
            what = f"delivery {new.delivery_id}"
            return bool(run_replicated(self.client, self._record, keys_, args, self.ack, what))
        return bool(self._record(keys=keys_, args=args))

    async def arecord(self, aclient: aioredis.Redis, keys_: list[str], args: list[Arg]) -> bool:
        """`record` on an asyncio client, for the intake's event loop, of a prepared
        `record_call`."""
        script = self._arecord.get(id(aclient))
        if script is None:  # AsyncScript loads itself again after NOSCRIPT (a Redis restart)
            script = self._arecord[id(aclient)] = aclient.register_script(RECORD)
        if not self.ack.replicas:
            return bool(await script(keys=keys_, args=args))
        # WAIT counts the writes of its own connection: the script and it in one pipeline
        async with aclient.pipeline(transaction=False) as pipe:
            await script(keys=keys_, args=args, client=pipe)
            pipe.execute_command("WAIT", self.ack.replicas, self.ack.timeout_ms)
            created, acknowledged = await pipe.execute()
        self.ack.check(int(acknowledged), f"delivery {args[0]!s}")
        return bool(created)

    def record_call(
        self, new: NewDelivery, *, queue: str, message: bytes
    ) -> tuple[list[str], list[Arg]]:
        """RECORD's KEYS and ARGV for `new` (`message` pushed onto `queue`, when given)."""
        received = new.received_at
        args: list[Arg] = [
            new.delivery_id,
            self.retention_seconds,
            received,
            received + self.lease,
            message,
            # the record's fields, name and value
            "event",
            new.event,
            "status",
            QUEUED,
            "receivedAt",
            repr(received),
            "body",
            pack(new.body),
            "runs",
            "0",
        ]
        if new.action:
            args += ("action", new.action)
        if new.repository:
            args += ("repository", new.repository)
        if new.installation_id is not None:
            args += ("installationId", str(new.installation_id))
        if new.hook_id:
            args += ("hookId", new.hook_id)
        keys_ = [
            keys.delivery(new.delivery_id),
            keys.DELIVERIES,
            keys.PENDING,
            queue or keys.PENDING,
        ]
        return keys_, args

    # reading ------------------------------------------------------------------
    def get(self, delivery_id: str) -> Delivery | None:
        values = cast(
            list[bytes | None], self.client.hmget(keys.delivery(delivery_id), RECORD_FIELDS)
        )
        raw = _fields(values)
        return parse_record(delivery_id, raw) if raw else None

    def body(self, delivery_id: str) -> bytes | None:
        packed = cast(bytes | None, self.client.hget(keys.delivery(delivery_id), "body"))
        return unpack(packed) if packed else None

    def runs(self, delivery_id: str) -> list[dict[str, Any]]:
        """The delivery's runs, first first (its record's fields `run:1` .. `run:<runs>`)."""
        record_key = keys.delivery(delivery_id)
        count = int(cast(bytes | None, self.client.hget(record_key, "runs")) or 0)
        if count < 1:
            return []
        names = [f"run:{n}" for n in range(1, count + 1)]
        raw = cast(list[bytes | None], self.client.hmget(record_key, names))
        return [orjson.loads(r) for r in raw if r]

    def last_runs(self, delivery_ids: Sequence[str]) -> list[bytes | None]:
        """Each delivery's last run (JSON as stored, None when it has none), in one round
        trip however many deliveries."""
        pipe = self.client.pipeline(transaction=False)
        for delivery_id in delivery_ids:
            self._last_run(keys=[keys.delivery(delivery_id)], client=pipe)
        return cast(list[bytes | None], pipe.execute())

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
            for raw_id in ids:  # not the body nor the runs: only what a Delivery holds
                pipe.hmget(keys.delivery(raw_id.decode()), RECORD_FIELDS)
            for raw_id, values in zip(ids, pipe.execute(), strict=True):
                raw = _fields(values)
                if raw:
                    yield parse_record(raw_id.decode(), raw)
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
        delivery = parse_record(delivery_id, raw, claimed=True, generation=generation)
        return state, delivery, unpack(packed) if packed else None

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
        keys_, args = finish_call(
            delivery_id,
            status=status,
            now=now,
            error=error or "",
            run=dump_json({**run, "finishedAt": iso(now), "status": status}),
            owner=owner,
            sessions=sessions,
            session_retention=self.session_retention_seconds,
        )
        if sessions and self.ack.replicas:  # the sessions are this run's dispatch marks
            what = f"the sessions of delivery {delivery_id}"
            return bool(run_replicated(self.client, self._finish, keys_, args, self.ack, what))
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
        """Mark a recorded delivery for another run (replay), no longer a dead letter; False
        when it is unknown."""
        record_key = keys.delivery(delivery_id)
        if not self.client.exists(record_key):
            return False
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(record_key, mapping={"status": QUEUED, "attempts": 0})
        pipe.zadd(keys.PENDING, {delivery_id: time.time() + self.lease})
        pipe.hdel(keys.SWEPT, delivery_id)
        pipe.zrem(keys.DEAD, delivery_id)
        pipe.execute()
        return True
