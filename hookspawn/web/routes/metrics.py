"""GET /metrics, the web's metrics flusher, and the intake timing that feeds the intake metrics."""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.periodic import every
from workers import metrics
from workers.metrics_collector import RedisCollector

log = logging.getLogger(__name__)

router = APIRouter()

#: how often the web process adds what it recorded to the shared Redis tally
FLUSH_INTERVAL = 2.0

# An event label comes from the X-GitHub-Event header: only a plausible event name is kept.
_EVENT_NAME = re.compile(r"[a-z][a-z_]{0,63}")
_UNKNOWN = "unknown"


@router.get(
    "/metrics",
    dependencies=[Depends(require_admin)],
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text"}},
)
async def scrape(request: Request) -> Response:
    """Prometheus metrics of every hookspawn process (summed in Redis); names start `hookspawn_`."""
    rt = runtime(request)
    registry = web_metrics(request.app).registry

    def collect() -> bytes:
        metrics.flush(rt.client)  # what this process recorded so far counts in this scrape
        return generate_latest(registry)

    body = await run_in_threadpool(collect)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


class WebMetrics:
    """One app's registry: its intake series in memory, everything else read from Redis."""

    def __init__(self, app: FastAPI) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        deliveries, seconds = metrics.DELIVERIES, metrics.INTAKE_SECONDS
        self.deliveries = Counter(
            deliveries.name, deliveries.help, deliveries.labels, registry=self.registry
        )
        self.seconds = Histogram(
            seconds.name, seconds.help, buckets=seconds.buckets, registry=self.registry
        )
        self.registry.register(RedisCollector(app.state.runtime.client))
        #: the counter's series by (event, answer), so each answer skips `labels()`
        self.children: dict[tuple[str, str], Any] = {}


def web_metrics(app: FastAPI) -> WebMetrics:
    found: WebMetrics | None = getattr(app.state, "web_metrics", None)
    if found is None:
        found = app.state.web_metrics = WebMetrics(app)
    return found


@contextlib.asynccontextmanager
async def flushing(app: FastAPI) -> AsyncIterator[None]:
    """App lifespan: flush this process's metrics every FLUSH_INTERVAL, and once at shutdown."""
    client = app.state.runtime.client
    async with every(FLUSH_INTERVAL, lambda: metrics.flush(client), at_exit=True):
        yield


def count_intake(counted: WebMetrics, event: str, status: str, started: float) -> None:
    """Count one webhook answer in `hookspawn_deliveries_total` by event (`event`: the
    X-GitHub-Event of a request whose signature was checked, else empty) and answer, and
    time it (`started`: its `time.perf_counter()`), in this process's memory."""
    label = event if _EVENT_NAME.fullmatch(event) else _UNKNOWN
    child = counted.children.get((label, status))
    if child is None:
        child = counted.children[(label, status)] = counted.deliveries.labels(label, status)
    child.inc()
    counted.seconds.observe(time.perf_counter() - started)
