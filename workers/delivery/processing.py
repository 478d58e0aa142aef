"""Running one delivery: lock and lease it, build its envelope, run the pipeline, record the run."""

from __future__ import annotations

import itertools
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis

from triggers.envelope import envelope_view
from triggers.json_codec import load_checked_body
from triggers.matching import Decision
from triggers.outcome import Outcome
from triggers.session.spec import SessionSpec
from workers import metrics
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import FAILED, PROCESSED, Delivery, iso
from workers.errors import Transient, WorkerError

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    """What one pass of the pipeline decided for a delivery."""

    outcomes: list[Outcome] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    #: what a lifecycle event changed in the connections, one line each
    connections: list[str] = field(default_factory=list)
    #: sessions decided (their outcomes say `dispatched`) but not written yet: they are
    #: created together with the run's record, in one atomic step (`DeliveryStore.finish`)
    staged: list[SessionSpec] = field(default_factory=list)
    #: the generation of the agent set that decided (workers/agents_source.py)
    agents_generation: str | None = None


class Pipeline(Protocol):
    def run(
        self,
        delivery: Delivery,
        body: Mapping[str, Any],
        envelope: dict[str, Any],
        *,
        final_attempt: bool,
    ) -> RunResult:
        """Decide and carry out every spawn of the delivery; raise Transient to be retried."""

    def dispatch_staged(self, result: RunResult) -> int:
        """Create `result.staged` one by one (when they could not go with the run's record),
        correcting the outcomes of those that existed already; empties `staged`. Returns
        how many it created."""

    def close(self) -> None:
        """Release what it holds (the dispatcher's connections), at process shutdown."""


def backoff(retries: int, retry_after: float | None, *, cap: float, floor: float = 1.0) -> float:
    """Exponential backoff with full jitter from `floor` seconds, or the server's own
    `retry_after` (never below the floor); never above cap."""
    if retry_after is not None:
        return float(min(cap, max(floor, retry_after)))
    return float(min(cap, floor * random.uniform(1.0, 2.0 ** min(retries + 1, 10))))


class LeaseKeeper:
    """Renews the lock and pending lease of every delivery this process is working on.

    One thread per process (started on first use, again after a fork), renewing every
    lease/3, so holding a delivery costs no thread of its own.
    """

    def __init__(self, store: DeliveryStore) -> None:
        self.store = store
        self._held: dict[str, str] = {}
        self._lock = threading.Lock()
        self._pid = -1

    @contextmanager
    def hold(self, delivery_id: str, owner: str) -> Iterator[None]:
        with self._lock:
            self._held[delivery_id] = owner
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="lease-keeper", daemon=True).start()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(delivery_id, None)

    def _run(self) -> None:
        pid = os.getpid()
        while self._pid == pid:
            time.sleep(self.store.lease / 3)
            with self._lock:
                held = list(self._held.items())
            for delivery_id, owner in held:
                try:
                    if self.store.renew(delivery_id, owner):
                        self.store.extend_lease(delivery_id, self.store.lease)
                except Exception as exc:  # a missed renewal only shortens the lease
                    log.warning("lease renewal for %s failed: %s", delivery_id, exc)


#: how much of an exception's message goes on the delivery record (the log has all of it)
MESSAGE_SHOWN = 500


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(code, message) recorded for an error that ends a delivery: a worker error's own code,
    anything else `internal_error` with the exception's type and message."""
    if isinstance(exc, WorkerError):
        return exc.code, exc.message[:MESSAGE_SHOWN]
    text = str(exc)
    text = f"{text[:MESSAGE_SHOWN]}…" if len(text) > MESSAGE_SHOWN else text
    return "internal_error", f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class DeliveryProcessor:
    """One delivery, at least once; a delivery already processed (not pending) is skipped.

    Every claim counts as an attempt, durably (`DeliveryStore.claim`). The store's
    `max_attempts`-th one is the final attempt; one past it fails the delivery at once
    (`attempts_exhausted`). Any error that is not Transient (nor the store being away) ends
    the delivery `failed` at once: it is a dead letter, replayable, never retried in a loop.
    """

    def __init__(self, store: DeliveryStore, pipeline: Pipeline) -> None:
        self.store = store
        self.pipeline = pipeline
        self.leases = LeaseKeeper(store)
        self._instance = uuid.uuid4().hex[:8]
        self._claims = itertools.count(1)

    def process(self, delivery_id: str, *, final_attempt: bool = False) -> str:
        """`processed`, `failed`, `skipped` (not pending) or `busy` (held by another worker).

        Raises Transient when the pipeline asks to be retried and attempts are left (the
        delivery stays pending), and Redis errors (the store is away: retried by the task).
        """
        # unique to this claim, also across processes forked with this processor
        owner = f"{os.getpid()}:{self._instance}:{next(self._claims)}"
        state, delivery, body = self.store.claim(delivery_id, owner)
        if state != "claimed":
            return state
        finished = False
        try:
            if delivery is None or body is None:
                # expired between enqueue and now: nothing left to do
                self.store.forget_pending(delivery_id)
                return "skipped"
            limit = self.store.max_attempts
            if delivery.attempts > limit:
                self._fail(
                    delivery,
                    owner,
                    "attempts_exhausted",
                    f"all {limit} attempts were used (HOOKSPAWN_MAX_RETRIES allows "
                    f"{limit - 1} retries); replay it to run it again",
                )
                finished = True
                return FAILED
            final_attempt = final_attempt or delivery.attempts >= limit
            try:
                with self.leases.hold(delivery_id, owner):
                    self._run(delivery, body, owner, final_attempt=final_attempt)
            except Transient as exc:
                metrics.inc(metrics.PROCESSING_RETRIES, exc.code)
                if not final_attempt:
                    raise
                log.error(
                    "delivery %s failed on its final attempt (%d): %s",
                    delivery_id,
                    delivery.attempts,
                    exc.message,
                )
                self._fail(delivery, owner, exc.code, exc.message)
                finished = True
                return FAILED
            except redis.RedisError:
                raise
            except Exception as exc:
                # a bug, or input nobody foresaw: never retried, never left pending
                log.exception("delivery %s (%s) failed", delivery_id, delivery.event)
                code, message = describe_error(exc)
                self._fail(delivery, owner, code, message)
                finished = True
                return FAILED
            finished = True
            return PROCESSED
        finally:
            try:
                if not finished:
                    self.store.unlock(delivery_id, owner)
            finally:
                metrics.FLUSHER.soon(self.store.client)  # counts reach Redis within a second

    def _fail(self, delivery: Delivery, owner: str, code: str, message: str) -> None:
        self.store.fail(delivery.delivery_id, code, message, owner=owner)
        metrics.inc(metrics.DELIVERIES_PROCESSED, delivery.event, FAILED)

    def _run(self, delivery: Delivery, body: bytes, owner: str, *, final_attempt: bool) -> None:
        started = time.time()
        # recorded before intake checked the depth: too deep for the pipeline to walk
        payload = load_checked_body(body)
        envelope = envelope_view(delivery.event, delivery.delivery_id, payload)
        result = self.pipeline.run(delivery, payload, envelope, final_attempt=final_attempt)
        created = len(result.staged)
        if not self.store.finish(
            delivery.delivery_id,
            _run_record(delivery, started, result),
            status=PROCESSED,
            error=None,
            owner=owner,
            sessions=result.staged,
        ):
            # a session of this spawn exists already (the delivery was recorded again after
            # its record expired), or the record itself is gone: one by one, then the run
            created = self.pipeline.dispatch_staged(result)
            run = _run_record(delivery, started, result)
            self.store.finish(delivery.delivery_id, run, status=PROCESSED, error=None, owner=owner)
        metrics.session_created(delivery.timed_from, created)
        metrics.count_outcomes(result.outcomes)
        metrics.inc(metrics.DELIVERIES_PROCESSED, delivery.event, PROCESSED)
        if log.isEnabledFor(logging.INFO):
            tally: dict[str, int] = {}
            for outcome in result.outcomes:
                kind, code = outcome.outcome, outcome.code
                key = f"{kind} ({code})" if code else kind
                tally[key] = tally.get(key, 0) + 1
            summary = ", ".join(f"{n} {k}" for k, n in sorted(tally.items())) or "nothing fired"
            log.info("delivery %s (%s): %s", delivery.delivery_id, delivery.event, summary)

    def give_up(self, delivery_id: str, error: Transient | BaseException) -> None:
        """Retries exhausted: the delivery is `failed` with the reason, and replayable."""
        code, reason = describe_error(error)
        self.store.fail(delivery_id, code, reason)
        delivery = self.store.get(delivery_id)
        metrics.inc(metrics.DELIVERIES_PROCESSED, delivery.event if delivery else "", FAILED)
        metrics.flush(self.store.client)


def _run_record(delivery: Delivery, started: float, result: RunResult) -> dict[str, Any]:
    """The run as stored with the delivery: its typed outcomes as JSON, made at the store."""
    record = {
        "run": delivery.runs + 1,
        "startedAt": iso(started),
        "outcomes": [outcome.to_json() for outcome in result.outcomes],
        "decisions": ([{"connections": result.connections}] if result.connections else [])
        + [decision.to_json() for decision in result.decisions],
    }
    if result.agents_generation is not None:
        record["agentsGeneration"] = result.agents_generation
    return record
