"""Times are written out in one way, by triggers.timestamps, and nowhere else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from triggers.timestamps import iso_z, now_iso, parse_iso

ROOT = Path(__file__).resolve().parents[2]


def test_a_time_is_written_in_utc_with_a_z() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert iso_z(moment) == "2026-01-02T03:04:05.678000Z"
    assert iso_z(moment, "seconds") == "2026-01-02T03:04:05Z"
    assert iso_z(moment, "milliseconds") == "2026-01-02T03:04:05.678Z"
    assert iso_z(moment.timestamp()) == "2026-01-02T03:04:05.678000Z"
    assert now_iso().endswith("Z") and now_iso("seconds").endswith("Z")


def test_a_written_time_reads_back() -> None:
    moment = datetime(2016, 7, 11, 22, 14, 10, tzinfo=UTC)
    assert parse_iso(iso_z(moment)) == moment
    assert parse_iso("2016-07-11T22:14:10") == moment
    assert parse_iso("2016-07-12T00:14:10+02:00") == moment
    assert parse_iso("2016-07-12T00:14:10+02:00").tzinfo == UTC
    assert iso_z(moment.astimezone(timezone(timedelta(hours=2)))) == "2016-07-12T00:14:10+02:00"


def test_no_other_module_writes_the_z_itself() -> None:
    own = ROOT / "triggers" / "timestamps.py"
    writers = [
        str(path.relative_to(ROOT))
        for package in ("hookspawn", "workers", "triggers", "agents", "templating")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != own and '.replace("+00:00", "Z")' in path.read_text()
    ]
    assert writers == []
