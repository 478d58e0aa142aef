"""`hookspawn deliveries recover`: find the webhook deliveries hookspawn missed, redeliver them.

GitHub keeps a log of every delivery attempt of the App's webhook (`GET /app/hook/deliveries`).
A delivery (one guid, the X-GitHub-Delivery) is missed when no attempt of it succeeded on
GitHub's side (the endpoint answered non-2xx or could not be reached), or when the delivery
store does not have it (lost before it was recorded). Without `apply` this only reports what it
would redeliver; with it, it asks GitHub to redeliver the newest attempt of each (which then
arrives through intake like any delivery, deduplicated on its id).

The look-back window is capped at the store's retention: older deliveries are absent because
they expired, not because they were missed, and redelivering them would run them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TextIO, cast

import redis

from triggers.timestamps import iso_z
from workers import keys
from workers.errors import WorkerError
from workers.github.client import GitHubApp, HookDelivery

__all__ = ["Missed", "RecoverReport", "find_missed", "format_report", "recover"]


@dataclass(frozen=True)
class Missed:
    """A delivery hookspawn missed: its newest attempt and why it counts as missed."""

    delivery: HookDelivery
    attempts: int
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        d = self.delivery
        return {
            "guid": d.guid,
            "attemptId": d.id,
            "event": d.event,
            "action": d.action,
            "deliveredAt": iso_z(d.delivered_at),
            "statusCode": d.status_code,
            "attempts": self.attempts,
            "reasons": list(self.reasons),
        }


@dataclass
class RecoverReport:
    since: datetime
    capped: bool  # the window was cut to the store's retention
    attempts: int  # rows in GitHub's log since `since`
    deliveries: int  # distinct guids among them
    missed: list[Missed]
    applied: bool = False
    redelivered: list[Missed] = field(default_factory=list)
    errors: list[tuple[Missed, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def find_missed(attempts: Sequence[HookDelivery], client: redis.Redis) -> tuple[int, list[Missed]]:
    """(distinct deliveries, the missed ones, oldest first) from GitHub's log rows."""
    by_guid: dict[str, list[HookDelivery]] = {}
    for attempt in attempts:
        by_guid.setdefault(attempt.guid, []).append(attempt)
    guids = list(by_guid)
    pipe = client.pipeline(transaction=False)
    for guid in guids:
        pipe.exists(keys.delivery(guid))
    stored = dict(zip(guids, cast(list[int], pipe.execute()), strict=True))
    missed = []
    for guid, rows in by_guid.items():
        newest = max(rows, key=lambda r: (r.delivered_at, r.id))
        reasons = []
        if not any(r.succeeded for r in rows):
            answered = (
                f"HTTP {newest.status_code}" if newest.status_code else "endpoint not reached"
            )
            reasons.append(
                f"failed on GitHub's side ({answered}, {newest.status or 'no status'}"
                f"{f', {len(rows)} attempts' if len(rows) > 1 else ''})"
            )
        if not stored[guid]:
            reasons.append("not in the delivery store")
        if reasons:
            missed.append(Missed(newest, len(rows), tuple(reasons)))
    missed.sort(key=lambda m: (m.delivery.delivered_at, m.delivery.id))
    return len(by_guid), missed


def recover(
    app: GitHubApp,
    client: redis.Redis,
    *,
    since: timedelta,
    retention: timedelta,
    apply: bool,
    now: datetime | None = None,
) -> RecoverReport:
    """List GitHub's delivery log back `since` (capped at `retention`), find the missed
    deliveries and, with `apply`, request their redelivery (one failure does not stop the rest).
    """
    now = now or datetime.now(UTC)
    window = min(since, retention)
    start = now - window
    attempts = app.list_webhook_deliveries(start)
    count, missed = find_missed(attempts, client)
    report = RecoverReport(start, since > retention, len(attempts), count, missed, applied=apply)
    if not apply:
        return report
    for item in missed:
        try:
            app.redeliver(item.delivery.id)
        except WorkerError as exc:
            report.errors.append((item, exc.message))
        else:
            report.redelivered.append(item)
    return report


def format_report(report: RecoverReport, *, retention: timedelta) -> str:
    when = iso_z(report.since, "seconds")
    lines = [
        f"GitHub's delivery log since {when}: {report.attempts} attempts, "
        f"{report.deliveries} deliveries, {len(report.missed)} missed"
    ]
    if report.capped:
        lines.append(
            f"note: the window is capped at the store's retention ({retention}); older deliveries "
            "have expired from the store, so their absence says nothing"
        )
    failed = {id(m) for m, _ in report.errors}
    verb = "redeliver" if report.applied else "would redeliver"
    for item in report.missed:
        d = item.delivery
        kind = d.event + (f".{d.action}" if d.action else "")
        stamp = iso_z(d.delivered_at, "seconds")
        lines.append(
            f"{verb} {d.guid} ({kind}, delivered {stamp}, attempt {d.id}): "
            f"{'; '.join(item.reasons)}"
        )
        if report.applied and id(item) not in failed:
            lines.append("  redelivery requested")
    for item, message in report.errors:
        lines.append(f"  {item.delivery.guid}: redelivery failed: {message}")
    if report.missed and not report.applied:
        lines.append("nothing was redelivered: run again with --apply to request these")
    elif not report.missed:
        lines.append("nothing to recover")
    return "".join(line + "\n" for line in lines)


def write_report(report: RecoverReport, *, retention: timedelta, out: TextIO) -> int:
    out.write(format_report(report, retention=retention))
    return 0 if report.ok else 1
