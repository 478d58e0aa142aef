"""The Celery app, configured so Redis as a broker neither loses nor silently drops work."""

from __future__ import annotations

from typing import Any

from celery import Celery

from workers.redis_connection import (
    broker_options,
    broker_url,
    close_channels_without_their_connection_in_kombu,
    follow_failovers_in_kombu,
)
from workers.redis_target import RedisTarget, Sentinels

#: hard limit of one task run; every countdown stays far below the visibility timeout
TASK_TIME_LIMIT = 300
TASK_SOFT_TIME_LIMIT = 240
#: a retry is never scheduled further out than this (longer waits are re-leased instead)
MAX_COUNTDOWN = 120
#: kombu re-delivers unacked messages after this; above every time limit and countdown
VISIBILITY_TIMEOUT = 1800
#: retries of one delivery before it is dead-lettered (failed, replayable)
MAX_RETRIES = 8

PROCESS_DELIVERY = "hookspawn.process_delivery"


def celery_config(target: RedisTarget) -> dict[str, Any]:
    """The Celery settings for a broker at `target` (a Redis URL, or the primary its
    sentinels name: kombu's `sentinel://` transport, which asks them on every connect)."""
    return {
        "broker_url": broker_url(target),
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": VISIBILITY_TIMEOUT,
            **broker_options(target),
        },
        "broker_pool_limit": 16,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_retry_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "task_ignore_result": True,
        "task_store_errors_even_if_ignored": False,
        "result_backend": None,
        "task_time_limit": TASK_TIME_LIMIT,
        "task_soft_time_limit": TASK_SOFT_TIME_LIMIT,
        "task_serializer": "json",
        "accept_content": ["json"],
        "worker_prefetch_multiplier": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "worker_hijack_root_logger": False,
        "worker_send_task_events": False,
        "task_default_queue": "hookspawn",
        "enable_utc": True,
    }


def make_celery(target: RedisTarget) -> Celery:
    close_channels_without_their_connection_in_kombu()
    if isinstance(target, Sentinels):
        follow_failovers_in_kombu()
    app = Celery("hookspawn", set_as_current=False)
    app.conf.update(celery_config(target))
    return app
