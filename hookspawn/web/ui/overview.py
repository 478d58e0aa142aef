"""What /ui's overview shows, read on page load from what hookspawn already keeps.

Nothing here is written while deliveries are processed: the counts come from the delivery
index (the newest RECORDS_READ deliveries), the session index and run records (the newest
SESSIONS_READ), the metrics hash every process flushes (outcomes, latency histogram) and the
queues' lengths. Each read is bounded, so the page costs the same however busy hookspawn is.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from hookspawn.web.ui import svg_charts
from workers import metrics
from workers.metrics_collector import read_stored, stored_fields
from workers.runtime import Runtime
from workers.session.status import SessionStatus

#: at most this many deliveries (newest first) are read for the hour and day charts
RECORDS_READ = 2000
#: at most this many sessions (newest first) are read for the status counts
SESSIONS_READ = 500
#: recent failures listed (deliveries and sessions each)
FAILURES_SHOWN = 10

HOUR, DAY = 3600, 86400
#: (label, seconds covered, slots)
WINDOWS = (("last hour", HOUR, 12), ("last day", DAY, 24))


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%H:%M")


def _metric_fields(
    raw: dict[bytes, bytes], series: metrics.Series
) -> list[tuple[str, tuple[str, ...], float]]:
    """(part, labels, value) of one series' fields."""
    return [(part, labels, number) for s, part, labels, number in stored_fields(raw) if s == series]


def quantile(buckets: list[tuple[float, float]], count: float, q: float) -> float | None:
    """The q-quantile's upper bound from cumulative (bound, count) buckets; None with no data
    (beyond the last finite bound: that bound, the most a histogram can say)."""
    if count <= 0 or not buckets:
        return None
    wanted = q * count
    for bound, seen in buckets:
        if seen >= wanted:
            return bound
    return buckets[-1][0]


def _deliveries(rt: Runtime, now: float) -> dict[str, Any]:
    read = rt.store.recent(limit=RECORDS_READ)
    charts = []
    for label, seconds, slots in WINDOWS:
        start, width = now - seconds, seconds / slots
        counts = [0] * slots
        statuses: Counter[str] = Counter()
        for delivery in read:
            if delivery.received_at < start:
                continue
            counts[min(slots - 1, int((delivery.received_at - start) // width))] += 1
            statuses[delivery.status] += 1
        series = svg_charts.time_series(
            counts, title=f"deliveries, {label}", first=_clock(start), last=_clock(now)
        )
        bars = svg_charts.bar_chart(
            sorted(statuses.items()), title=f"delivery status, {label}", width=280
        )
        charts.append({"label": label, "total": sum(counts), "series": series, "statuses": bars})
    failed = [d.to_json() for d in read if d.status == "failed"][:FAILURES_SHOWN]
    return {
        "windows": charts,
        "read": len(read),
        "capped": len(read) >= RECORDS_READ,
        "failed": failed,
    }


def _outcomes(raw: dict[bytes, bytes]) -> list[tuple[str, int]]:
    counts: Counter[str] = Counter()
    for _, labels, value in _metric_fields(raw, metrics.OUTCOMES):
        outcome, code = (*labels, "", "")[:2]
        counts[f"{outcome}: {code}" if code else outcome] += int(value)
    return counts.most_common(8)


def _latency(raw: dict[bytes, bytes]) -> dict[str, Any]:
    count, per_bucket = 0.0, dict[float, float]()
    for part, _, value in _metric_fields(raw, metrics.SESSION_LATENCY):
        if part == metrics.COUNT_FIELD:
            count += value
        elif part not in (metrics.SUM_FIELD, metrics.INF_BUCKET):
            bound = float(part)
            per_bucket[bound] = per_bucket.get(bound, 0.0) + value
    cumulative, seen = [], 0.0
    for bound in metrics.SESSION_LATENCY.buckets:
        seen += per_bucket.get(float(bound), 0.0)
        cumulative.append((float(bound), seen))
    bars = [
        (f"≤{metrics.bucket_label(b)}s", per_bucket.get(float(b), 0.0))
        for b in metrics.SESSION_LATENCY.buckets
    ]
    while bars and not bars[-1][1]:
        bars.pop()
    return {
        "count": int(count),
        "p50": quantile(cumulative, count, 0.5),
        "p99": quantile(cumulative, count, 0.99),
        "chart": svg_charts.bar_chart(bars, title="webhook to session, seconds"),
    }


def _sessions(rt: Runtime) -> dict[str, Any]:
    ids = rt.sessions.ids(limit=SESSIONS_READ)
    runs = rt.runs.views(ids)
    statuses: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    failed: list[dict[str, Any]] = []
    for session_id in ids:
        run = runs.get(session_id)
        status = run.status.value if run is not None else "recorded"
        statuses[status] += 1
        if run is not None and run.status == SessionStatus.FAILED:
            code = run.failure.code if run.failure is not None else "unknown"
            codes[code] += 1
            if len(failed) < FAILURES_SHOWN:
                message = run.failure.message if run.failure is not None else None
                failed.append({"id": session_id, "code": code, "message": message})
    return {
        "read": len(ids),
        "statuses": svg_charts.bar_chart(sorted(statuses.items()), title="sessions by status"),
        "codes": svg_charts.bar_chart(
            codes.most_common(8), title="failed sessions by code", colour="#cf222e"
        ),
        "failed": failed,
    }


def gather(rt: Runtime, now: float | None = None) -> dict[str, Any]:
    """Everything the overview page shows."""
    now = time.time() if now is None else now
    stored = read_stored(rt.client)
    runner = rt.runs.counts(now)
    outcomes = _outcomes(stored.fields)
    return {
        "title": "Overview",
        "deliveries": _deliveries(rt, now),
        "queue": {"celery": stored.celery, "pending": stored.pending, "dead": stored.dead},
        "runner": {
            "enabled": rt.settings.runner == "local",
            "queued": runner.queued,
            "messages": runner.messages,
            "running": runner.running,
            "overdue": runner.overdue,
        },
        "outcomes": svg_charts.bar_chart(outcomes, title="spawn outcomes since start"),
        "outcome_total": sum(n for _, n in outcomes),
        "latency": _latency(stored.fields),
        "sessions": _sessions(rt),
        "now": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
