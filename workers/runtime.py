"""Wires one process together from Settings: Redis client, stores, Celery app, tasks, pipeline."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import redis
from celery import Celery

from workers.celery_app import PROCESS_DELIVERY, make_celery
from workers.deliveries import DeliveryStore
from workers.processing import DeliveryProcessor, Pipeline, RecordOnly
from workers.settings import Settings
from workers.tasks import register_tasks


def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        socket_timeout=5,
        socket_connect_timeout=2,
        health_check_interval=30,
        retry_on_timeout=False,
    )


@dataclass
class Runtime:
    """Everything a web or worker process needs, built once from Settings."""

    settings: Settings
    redis_url: str
    client: redis.Redis
    store: DeliveryStore
    celery: Celery
    process_delivery: Any

    def enqueue(self, delivery_id: str) -> None:
        self.celery.send_task(PROCESS_DELIVERY, args=[delivery_id])

    def close(self) -> None:
        self.client.close()


class _PerProcess:
    """Builds the processor lazily in each (forked) worker process."""

    def __init__(self, settings: Settings, redis_url: str, pipeline: Pipeline | None) -> None:
        self.settings, self.redis_url, self.pipeline = settings, redis_url, pipeline
        self._pid = -1
        self._proc: DeliveryProcessor | None = None
        self._lock = threading.Lock()

    def __call__(self) -> DeliveryProcessor:
        with self._lock:
            if self._proc is None or self._pid != os.getpid():
                store = DeliveryStore(
                    redis_client(self.redis_url),
                    retention=self.settings.retention,
                    lease=self.settings.lease_seconds,
                )
                self._proc = DeliveryProcessor(store, self.pipeline or RecordOnly())
                self._pid = os.getpid()
            return self._proc


def build_runtime(
    settings: Settings, *, redis_url: str | None = None, pipeline: Pipeline | None = None
) -> Runtime:
    url = redis_url or settings.redis_url
    if not url:
        raise ValueError("no Redis URL: set HOOKSPAWN_REDIS_URL or use `hookspawn serve`")
    client = redis_client(url)
    celery = make_celery(url)
    task = register_tasks(
        celery, _PerProcess(settings, url, pipeline), max_retries=settings.max_retries
    )
    store = DeliveryStore(client, retention=settings.retention, lease=settings.lease_seconds)
    return Runtime(settings, url, client, store, celery, task)
