"""The web's `/metrics` reader: the summed Redis hash and the queue sizes, as metric families.

Every process flushes its counts into one Redis hash (`workers.metrics`); the queue sizes are
read at scrape time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import cast

import orjson
import redis
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from workers import keys
from workers.metrics import ALL, COUNT_FIELD, INF_BUCKET, SUM_FIELD, Series, bucket_label

__all__ = [
    "DEAD_LETTERS",
    "QUEUE_DEPTH",
    "RedisCollector",
    "Stored",
    "read_stored",
    "stored_fields",
]

# Computed at scrape time from Redis, not recorded.
QUEUE_DEPTH = "hookspawn_queue_depth"
DEAD_LETTERS = "hookspawn_dead_letters"

_BY_NAME = {series.name: series for series in ALL}


@dataclass(frozen=True)
class Stored:
    """What every process flushed (the metrics hash, its raw fields) and the delivery queues'
    sizes: messages in the Celery queue, deliveries recorded but not processed, dead letters."""

    fields: dict[bytes, bytes]
    celery: int
    pending: int
    dead: int


def read_stored(client: redis.Redis) -> Stored:
    """The metrics hash and the queue sizes, in one round trip."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(keys.METRICS)
    pipe.llen(keys.CELERY_QUEUE)
    pipe.zcard(keys.PENDING)
    pipe.zcard(keys.DEAD)
    raw, celery, pending, dead = pipe.execute()
    return Stored(cast(dict[bytes, bytes], raw), int(celery), int(pending), int(dead))


class RedisCollector(Collector):
    """Every recorded series from the Redis hash, plus queue sizes read at scrape time."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def describe(self) -> Iterator[Metric]:
        for series in ALL:
            yield _family(series)
        yield GaugeMetricFamily(QUEUE_DEPTH, "", labels=("queue",))
        yield GaugeMetricFamily(DEAD_LETTERS, "")

    def collect(self) -> Iterator[Metric]:
        stored = read_stored(self.client)
        yield from _families(stored.fields)
        depth = GaugeMetricFamily(
            QUEUE_DEPTH,
            "Deliveries waiting: messages in the Celery queue list `hookspawn` (queue=celery) "
            "and deliveries recorded but not yet processed (queue=pending).",
            labels=("queue",),
        )
        depth.add_metric(("celery",), stored.celery)
        depth.add_metric(("pending",), stored.pending)
        yield depth
        yield GaugeMetricFamily(
            DEAD_LETTERS,
            "Deliveries whose processing gave up (status failed), kept for replay.",
            value=stored.dead,
        )


def _family(series: Series) -> Metric:
    if series.kind == "histogram":
        return HistogramMetricFamily(series.name, series.help, labels=series.labels)
    return CounterMetricFamily(series.name, series.help, labels=series.labels)


@dataclass
class _Histogram:
    buckets: dict[str, int]
    count: int = 0
    total: float = 0.0


def stored_fields(
    raw: Mapping[bytes, bytes],
) -> Iterator[tuple[Series, str, tuple[str, ...], float]]:
    """(series, part, label values, value) of each field of the metrics hash (a field is
    `[name, part, *labels]` as JSON); fields another version wrote are left out."""
    for field, value in raw.items():
        try:
            name, part, *labels = orjson.loads(field)
            number = float(value)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            continue
        series = _BY_NAME.get(name)
        if series is None or len(labels) != len(series.labels):
            continue  # written by another version: not ours to show
        yield series, str(part), tuple(str(v) for v in labels), number


class _Tally:
    """The Redis hash, summed per series and label values."""

    def __init__(self, raw: Mapping[bytes, bytes]) -> None:
        self.counters: dict[str, dict[tuple[str, ...], float]] = {s.name: {} for s in ALL}
        self.histograms: dict[str, dict[tuple[str, ...], _Histogram]] = {s.name: {} for s in ALL}
        for series, part, values, number in stored_fields(raw):
            self.add(series, part, values, number)

    def add(self, series: Series, part: str, values: tuple[str, ...], number: float) -> None:
        if series.kind == "counter":
            seen = self.counters[series.name]
            seen[values] = seen.get(values, 0.0) + number
            return
        histogram = self.histograms[series.name].setdefault(values, _Histogram({}))
        if part == COUNT_FIELD:
            histogram.count += int(number)
        elif part == SUM_FIELD:
            histogram.total += number
        else:
            histogram.buckets[part] = histogram.buckets.get(part, 0) + int(number)


def _families(raw: Mapping[bytes, bytes]) -> Iterator[Metric]:
    tally = _Tally(raw)
    for series in ALL:
        if series.kind == "counter":
            counter = CounterMetricFamily(series.name, series.help, labels=series.labels)
            seen = tally.counters[series.name]
            for values in series.always:
                seen.setdefault(values, 0.0)
            for values, number in sorted(seen.items()):
                counter.add_metric(values, number)
            yield counter
            continue
        histogram = HistogramMetricFamily(series.name, series.help, labels=series.labels)
        seen_h = tally.histograms[series.name]
        if not series.labels:
            seen_h.setdefault((), _Histogram({}))
        for values, observed in sorted(seen_h.items(), key=lambda item: item[0]):
            buckets, total = _cumulative(series, observed)
            histogram.add_metric(values, buckets, total)
        yield histogram


def _cumulative(series: Series, histogram: _Histogram) -> tuple[list[tuple[str, float]], float]:
    running = 0
    out: list[tuple[str, float]] = []
    for bound in series.buckets:
        le = bucket_label(bound)
        running += histogram.buckets.get(le, 0)
        out.append((le, float(running)))
    running += histogram.buckets.get(INF_BUCKET, 0)
    out.append((INF_BUCKET, float(max(running, histogram.count))))
    return out, histogram.total
