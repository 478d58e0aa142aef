"""The stale-work sweep: deliveries whose lease ran out (their worker died) are enqueued again."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis

from workers import metrics
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import FAILED
from workers.delivery.upkeep import IndexUpkeep

log = logging.getLogger(__name__)


class Sweeper:
    """Every `interval` seconds, claims the deliveries whose lease expired and re-enqueues them.

    A lease is renewed while a worker holds the delivery and pushed past any retry
    countdown, so only work that nobody holds any more is taken up again. Claiming is
    atomic, so several sweepers (one per worker process) never enqueue the same
    delivery twice for the same expiry.

    With `upkeep`, the same thread trims the indexes to their retention every
    `upkeep.interval` (the first time at its first sweep).
    """

    def __init__(
        self,
        store: DeliveryStore,
        enqueue: Callable[[str], None],
        *,
        interval: float = 5.0,
        upkeep: IndexUpkeep | None = None,
    ) -> None:
        self.store = store
        self.enqueue = enqueue
        self.interval = interval
        self.upkeep = upkeep
        self._upkeep_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep_once(self) -> list[str]:
        """Enqueue the lost deliveries again (their ids are returned); those that used every
        attempt end `failed` (`attempts_exhausted`) instead."""
        due = self.store.claim_due()
        for delivery_id in due.exhausted:
            self.store.fail(
                delivery_id,
                "attempts_exhausted",
                f"all {self.store.max_attempts} attempts were used (the last one's worker was "
                "lost); replay it to run it again",
            )
            record = self.store.get(delivery_id)
            metrics.inc(metrics.DELIVERIES_PROCESSED, record.event if record else "", FAILED)
        if due.exhausted:
            metrics.flush(self.store.client)
            log.error(
                "failed %d delivery(ies) out of attempts: %s",
                len(due.exhausted),
                due.exhausted[:10],
            )
        for delivery_id in due.again:
            self.enqueue(delivery_id)
        if due.again:
            log.warning(
                "re-enqueued %d delivery(ies) whose lease ran out: %s",
                len(due.again),
                due.again[:10],
            )
        return due.again

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sweep_once()
            except (redis.RedisError, OSError) as exc:
                log.warning("stale-work sweep skipped: %s", exc)
            except Exception:
                log.exception("stale-work sweep failed")
            self._keep_up()

    def _keep_up(self) -> None:
        if self.upkeep is None or time.monotonic() < self._upkeep_at:
            return
        self._upkeep_at = time.monotonic() + self.upkeep.interval
        try:
            self.upkeep.run_if_due()
        except (redis.RedisError, OSError) as exc:
            log.warning("index upkeep skipped: %s", exc)
        except Exception:
            log.exception("index upkeep failed")

    def start(self) -> Sweeper:
        self._thread = threading.Thread(target=self._run, name="hookspawn-sweeper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=self.interval + 5)
