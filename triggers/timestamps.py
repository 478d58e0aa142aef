"""The one way a time is written out: ISO 8601 in UTC with a `Z` (GitHub's own form)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso_z", "now_iso", "parse_iso"]


def iso_z(moment: datetime | float, timespec: str = "auto") -> str:
    """`moment` (an aware datetime, or epoch seconds) as `2026-01-02T03:04:05.678Z`;
    `timespec` as datetime.isoformat takes it (`seconds`, `milliseconds` …)."""
    when = moment if isinstance(moment, datetime) else datetime.fromtimestamp(moment, UTC)
    return when.isoformat(timespec=timespec).replace("+00:00", "Z")


def now_iso(timespec: str = "auto") -> str:
    """The time now, as iso_z writes it."""
    return iso_z(datetime.now(UTC), timespec)


def parse_iso(text: str) -> datetime:
    """An ISO 8601 time (`…Z` or with an offset) → an aware UTC datetime (no zone: UTC)."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
