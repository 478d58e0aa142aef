"""Prometheus metrics across processes: buffered in each process, summed in Redis, read by the web.

Web and workers are separate processes (containers, prefork children), so a counter kept in one
process's memory would never reach the web's `GET /metrics`. Instead every process records into
an in-memory buffer here (no I/O, a lock and a dict update) and `flush` adds the buffer to one
Redis hash in a single MULTI/EXEC round trip: workers flush from a thread once a second, the
web flushes every couple of seconds and before each scrape. `workers.metrics_collector` turns
that hash, plus the queue sizes read at scrape time, into Prometheus metric families.

The intake series (`WEB_LOCAL`) are the exception: the web counts them in its own memory.
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import orjson
import redis

from triggers.outcome import Outcome
from workers import keys

__all__ = [
    "ALL",
    "BUFFER",
    "COUNT_FIELD",
    "CREDENTIALS",
    "DELIVERIES",
    "DELIVERIES_PROCESSED",
    "DISPATCH_RETRIES",
    "FLUSHER",
    "GITHUB_ERRORS",
    "INF_BUCKET",
    "INTAKE_SECONDS",
    "OUTCOMES",
    "PROCESSING_RETRIES",
    "SESSIONS_ENDED",
    "SESSION_LATENCY",
    "SESSION_START_SECONDS",
    "SPAWN_REPEATS",
    "SUM_FIELD",
    "TOKEN_CACHE",
    "WEB_LOCAL",
    "MetricsBuffer",
    "Series",
    "bucket_label",
    "count_outcomes",
    "flush",
    "inc",
    "observe",
]

log = logging.getLogger(__name__)

Kind = Literal["counter", "histogram"]

#: label values are cut to this length: a metric label is a name, never a payload
MAX_LABEL = 100


@dataclass(frozen=True)
class Series:
    """One metric family that processes record into Redis."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()
    #: label values every scrape shows (at zero until recorded), for fixed label sets
    always: tuple[tuple[str, ...], ...] = ()


DELIVERIES = Series(
    "hookspawn_deliveries_total",
    "counter",
    "Webhook deliveries received at POST /webhooks/github, by event and intake status "
    "(queued, duplicate, or the error code of the rejection).",
    ("event", "status"),
)
DELIVERIES_PROCESSED = Series(
    "hookspawn_deliveries_processed_total",
    "counter",
    "Processing runs of deliveries that ended, by event and the delivery's status "
    "(processed, failed).",
    ("event", "status"),
)
OUTCOMES = Series(
    "hookspawn_outcomes_total",
    "counter",
    "Spawn outcomes recorded (trigger-driven, manual and agent-to-agent starts), by outcome "
    "and code (empty for dispatched); dispatched counts sessions created, never a spawn "
    "answered with a session that already existed (see hookspawn_spawn_repeats_total).",
    ("outcome", "code"),
)
SPAWN_REPEATS = Series(
    "hookspawn_spawn_repeats_total",
    "counter",
    "Spawns answered with the session that already existed for their spawn id, by origin: "
    "trigger (a replayed or re-run delivery), manual or agent (a start repeated with its "
    "Idempotency-Key).",
    ("origin",),
    always=(("trigger",), ("manual",), ("agent",)),
)
INTAKE_SECONDS = Series(
    "hookspawn_intake_duration_seconds",
    "histogram",
    "Time the webhook endpoint took from the request to its answer (checks, durable record, "
    "enqueue).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
SESSION_LATENCY = Series(
    "hookspawn_webhook_to_session_seconds",
    "histogram",
    "Time from a delivery's receipt to a session dispatched for it (trigger-driven spawns, "
    "counted once per session created by the delivery's first run; a replay's are not timed).",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0),
)
TOKEN_CACHE = Series(
    "hookspawn_token_cache_lookups_total",
    "counter",
    "Installation-token cache lookups, by result (hit: served from the cache, miss: minted).",
    ("result",),
    always=(("hit",), ("miss",)),
)
GITHUB_ERRORS = Series(
    "hookspawn_github_errors_total",
    "counter",
    "Failed GitHub API calls, by class (rate_limited, server_error, timeout, unreachable, "
    "unreadable, unauthorized, installation_deleted, installation_suspended, "
    "repository_inaccessible, permission_not_granted, client_error, request_error).",
    ("class",),
)
DISPATCH_RETRIES = Series(
    "hookspawn_dispatch_retries_total",
    "counter",
    "Session dispatch POSTs to HOOKSPAWN_DISPATCH_URL tried again after a failed answer.",
    always=((),),
)
PROCESSING_RETRIES = Series(
    "hookspawn_processing_retries_total",
    "counter",
    "Processing attempts that ended in a transient error (retried with backoff, or given up "
    "once retries ran out), by error code.",
    ("code",),
)
CREDENTIALS = Series(
    "hookspawn_credentials_total",
    "counter",
    "Broker decisions, by kind (git: a git credential, tool: a GitHub tool call, session: a "
    "session credential issued or revoked) and result (allowed, denied).",
    ("kind", "result"),
)
SESSIONS_ENDED = Series(
    "hookspawn_sessions_ended_total",
    "counter",
    "Sessions the local runner ran to their end, by status (succeeded, failed, cancelled) and "
    "failure code (empty unless failed).",
    ("status", "code"),
)
SESSION_START_SECONDS = Series(
    "hookspawn_session_start_seconds",
    "histogram",
    "Seconds from a session's creation to `running` on the local runner (queue wait, "
    "staging and setup).",
    buckets=(0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
)

#: recorded into Redis by any process
ALL: tuple[Series, ...] = (
    DELIVERIES_PROCESSED,
    OUTCOMES,
    SPAWN_REPEATS,
    SESSION_LATENCY,
    TOKEN_CACHE,
    GITHUB_ERRORS,
    DISPATCH_RETRIES,
    PROCESSING_RETRIES,
    CREDENTIALS,
    SESSIONS_ENDED,
    SESSION_START_SECONDS,
)

#: kept in the web process's memory (hookspawn/web/routes/metrics.py): intake must not write to
#: Redis beyond the delivery itself, and a refused delivery must leave Redis untouched
WEB_LOCAL: tuple[Series, ...] = (DELIVERIES, INTAKE_SECONDS)
COUNT_FIELD, SUM_FIELD, INF_BUCKET = "count", "sum", "+Inf"


@functools.lru_cache(maxsize=256)
def bucket_label(bound: float) -> str:
    """A bucket's upper bound as the `le` label shows it (`0.005`, `1.0`)."""
    return repr(float(bound))


def _field(series: Series, part: str, labels: tuple[str, ...]) -> bytes:
    return _field_bytes(series.name, part, labels)


#: a process records the same few series over and over: their fields are made once each
@functools.lru_cache(maxsize=4096)
def _field_bytes(name: str, part: str, labels: tuple[str, ...]) -> bytes:
    return orjson.dumps([name, part, *labels])


def _labels(series: Series, values: tuple[str, ...]) -> tuple[str, ...]:
    if len(values) != len(series.labels):
        raise ValueError(
            f"{series.name} takes labels {series.labels}, got {len(values)} values {values!r}"
        )
    return tuple(str(v)[:MAX_LABEL] for v in values)


class MetricsBuffer:
    """The in-memory buffer of one process: increments since the last flush."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: held from taking the buffer until Redis has it (see flush)
        self._flushing = threading.Lock()
        self._ints: dict[bytes, int] = {}
        self._floats: dict[bytes, float] = {}

    def inc(self, series: Series, *labels: str, amount: int = 1) -> None:
        field = _field(series, "", _labels(series, labels))
        with self._lock:
            self._ints[field] = self._ints.get(field, 0) + amount

    def observe(self, series: Series, value: float, *labels: str) -> None:
        """One histogram observation: its bucket (non-cumulative here), count and sum."""
        values = _labels(series, labels)
        index = bisect.bisect_left(series.buckets, value)
        le = bucket_label(series.buckets[index]) if index < len(series.buckets) else INF_BUCKET
        bucket, count = _field(series, le, values), _field(series, COUNT_FIELD, values)
        total = _field(series, SUM_FIELD, values)
        with self._lock:
            self._ints[bucket] = self._ints.get(bucket, 0) + 1
            self._ints[count] = self._ints.get(count, 0) + 1
            self._floats[total] = self._floats.get(total, 0.0) + float(value)

    def pending(self) -> int:
        with self._lock:
            return len(self._ints) + len(self._floats)

    def flush(self, client: redis.Redis) -> bool:
        """Add the buffer to Redis in one atomic round trip; on failure keep it for next time.

        One flush at a time: a flush that finds the buffer empty because another took it has
        waited for that one to reach Redis, so whatever was recorded before a flush returns is
        in Redis when it returns (a scrape flushes, then reads)."""
        with self._flushing:
            with self._lock:
                ints, floats = self._ints, self._floats
                if not ints and not floats:
                    return True
                self._ints, self._floats = {}, {}
            try:
                pipe = client.pipeline(transaction=True)
                for field, amount in ints.items():
                    pipe.hincrby(keys.METRICS, field, amount)
                for field, value in floats.items():
                    pipe.hincrbyfloat(keys.METRICS, field, value)
                pipe.execute()
            except redis.RedisError as exc:
                # MULTI/EXEC: none of it was applied, so putting it back counts nothing twice
                self._merge(ints, floats)
                log.debug("metrics flush failed, kept for the next one: %s", exc)
                return False
            return True

    def reset(self) -> None:
        """A fresh lock and buffer (after fork: the child must not inherit the parent's)."""
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._ints, self._floats = {}, {}

    def _merge(self, ints: Mapping[bytes, int], floats: Mapping[bytes, float]) -> None:
        with self._lock:
            for field, amount in ints.items():
                self._ints[field] = self._ints.get(field, 0) + amount
            for field, value in floats.items():
                self._floats[field] = self._floats.get(field, 0.0) + value


#: this process's buffer
BUFFER = MetricsBuffer()
os.register_at_fork(after_in_child=BUFFER.reset)


def inc(series: Series, *labels: str, amount: int = 1) -> None:
    BUFFER.inc(series, *labels, amount=amount)


def observe(series: Series, value: float, *labels: str) -> None:
    BUFFER.observe(series, value, *labels)


def session_created(received_at: float, count: int = 1) -> None:
    """`count` webhook → session latencies, from `received_at` (epoch seconds) to now; none
    when the receive time is unknown (0)."""
    if not received_at:
        return
    latency = max(0.0, time.time() - received_at)
    for _ in range(count):
        observe(SESSION_LATENCY, latency)


def flush(client: redis.Redis) -> bool:
    return BUFFER.flush(client)


class Flusher:
    """Flushes this process's buffer every `interval` seconds from a daemon thread.

    Workers call `soon` after each delivery instead of flushing inline: the hot path does
    no metrics I/O, and counts reach Redis within a second. One thread per process, started
    on first use (so a forked pool process starts its own).
    """

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._pid = -1
        self._lock = threading.Lock()
        self._client: redis.Redis | None = None

    def soon(self, client: redis.Redis) -> None:
        self._client = client  # the latest store this process works with
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            threading.Thread(target=self._run, name="metrics-flusher", daemon=True).start()

    def _run(self) -> None:
        pid = os.getpid()
        while self._pid == pid:
            time.sleep(self.interval)
            if self._client is not None:
                BUFFER.flush(self._client)


#: this process's periodic flusher
FLUSHER = Flusher()


def count_outcomes(outcomes: Iterable[Outcome], *, origin: str = "trigger") -> None:
    """One `hookspawn_outcomes_total` increment per recorded outcome, except a `dispatched`
    one whose session already existed: that is a `hookspawn_spawn_repeats_total{origin}`."""
    for outcome in outcomes:
        if outcome.repeat:
            inc(SPAWN_REPEATS, origin)
        else:
            inc(OUTCOMES, outcome.outcome, outcome.code or "")
