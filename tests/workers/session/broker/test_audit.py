"""The broker's audit trail per session: bounded, newest first, kept as long as sessions are."""

from __future__ import annotations

from datetime import timedelta

import redis

from workers import keys
from workers.session.audit import SessionAudit


def test_the_trail_is_bounded_and_expires_a_retention_after_its_newest_entry(
    redis_client: redis.Redis,
) -> None:
    audit = SessionAudit(redis_client, limit=3, retention=timedelta(hours=1))
    for n in range(5):
        audit.record("s1", "git", "allowed", repository=f"acme/r{n}", token="never kept")
    entries = audit.entries("s1")
    assert [e["repository"] for e in entries] == ["acme/r4", "acme/r3", "acme/r2"]
    assert all("token" not in e for e in entries)
    assert 3590 < int(redis_client.ttl(keys.session_audit("s1"))) <= 3600
    assert audit.entries("other") == []
