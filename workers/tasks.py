"""Celery tasks: `process_delivery(delivery_id)`, retried with backoff on transient errors only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery, Task

from workers.celery_app import MAX_COUNTDOWN, MAX_RETRIES, PROCESS_DELIVERY
from workers.delivery.processing import DeliveryProcessor, backoff
from workers.errors import StoreUnavailable, Transient

log = logging.getLogger(__name__)


def register_tasks(
    app: Celery,
    processor: Callable[[], DeliveryProcessor],
    *,
    max_retries: int = MAX_RETRIES,
    backoff_floor: float = 1.0,
) -> Any:
    """Bind `process_delivery` to `app`; `processor()` gives this process's processor; a retry
    waits at least `backoff_floor` seconds."""

    @app.task(  # type: ignore[untyped-decorator]
        bind=True,
        name=PROCESS_DELIVERY,
        max_retries=max_retries,
        acks_late=True,
        shared=False,
        # a retry after a lost worker process (task_retry_on_worker_lost) comes back soon;
        # Celery's default would hold it for 3 minutes
        default_retry_delay=5,
    )
    def process_delivery(self: Task, delivery_id: str) -> str:
        proc = processor()
        retries = int(self.request.retries or 0)
        try:
            return proc.process(delivery_id, final_attempt=retries >= max_retries)
        except redis.RedisError as exc:
            error: Transient = StoreUnavailable(f"store unavailable: {exc}")
        except Transient as exc:
            error = exc
        # the store counts attempts durably and fails the final one itself; Celery's own
        # count (reset by every sweep) bounds only the retries of a store that was away
        if retries >= max_retries:
            log.error("delivery %s failed after %d retries: %s", delivery_id, retries, error)
            proc.give_up(delivery_id, error)
            return "failed"
        countdown = backoff(retries, error.retry_after, cap=MAX_COUNTDOWN, floor=backoff_floor)
        with contextlib.suppress(redis.RedisError):
            # the sweep must see a waiting retry as held work, not as lost work
            proc.store.extend_lease(delivery_id, countdown + proc.store.lease)
        log.warning("delivery %s: %s; retry in %.1fs", delivery_id, error.message, countdown)
        raise self.retry(countdown=countdown, exc=error)

    return process_delivery
