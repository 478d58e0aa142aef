"""`kill -9` Redis with deliveries queued and in flight: nothing answered 202 is lost.

Redis runs with `appendfsync always`, so that a power loss loses nothing answered 202.
A SIGKILL alone would not need it (what Redis wrote before answering sits in the page cache
and survives the process), but under `everysec` Redis may postpone the write itself by up to
two seconds while a slow fsync is still running and answer the client meanwhile, so on a busy
disk even a process crash can lose a delivery that was answered 202. With `always` the write
and the fsync happen before the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis

from tests.faults.conftest import Cluster

BEFORE, DURING, AFTER = 30, 12, 10


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_redis_sigkill_loses_nothing_answered_202_and_intake_answers_503_while_down(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(lease=3.0, max_retries=8, appendfsync="always")
    cluster.target.delay = 0.2
    config = redis.Redis.from_url(cluster.redis.url)
    assert config.config_get("appendfsync") == {"appendfsync": "always"}
    config.close()
    started = time.monotonic()
    before = [cluster.send_pr() for _ in range(BEFORE)]
    assert all(a.status == 202 for a in before), [a.status for a in before]
    cluster.watch.wait_inflight()
    queued_at_kill = len(cluster.pending())
    cluster.redis.kill()
    down_since = time.monotonic()

    # while Redis is down: never 202 (503, or no answer at all)
    during = [cluster.send_pr() for _ in range(DURING)]
    ready = cluster.http.get("/readyz")
    down_for = time.monotonic() - down_since

    cluster.redis.start()
    restarted = time.monotonic()
    # the AOF gave back every delivery answered 202, before anything is processed again
    recorded = cluster.statuses()
    lost = [d for d in cluster.accepted if d not in recorded]
    assert not lost, f"answered 202 but gone after the restart: {lost}"

    after = [cluster.send_pr() for _ in range(AFTER)]
    views = cluster.settle()
    replayed = cluster.replay_failed(views)
    cluster.audit(views).assert_clean()

    answered_202 = [a.delivery for a in during if a.status == 202]
    assert not answered_202, f"intake answered 202 while Redis was down: {answered_202}"
    statuses = sorted({a.status for a in during})
    assert statuses == [503], f"while Redis was down intake answered {statuses}"
    assert ready.status_code == 503, ready.text
    assert queued_at_kill >= 5, f"only {queued_at_kill} deliveries were queued at the kill"
    rejected = [a.delivery for a in during]
    stray = [d for d in rejected if d in cluster.statuses()]
    assert not stray, f"answered 503 yet recorded (and so processed): {stray}"
    assert all(a.status == 202 for a in after), [a.status for a in after]
    scanned = cluster.assert_no_secrets()
    print(
        f"\nredis kill -9: {queued_at_kill} deliveries pending at the kill, "
        f"{len(during)} sent while down ({down_for:.1f}s) all 503, "
        f"{len(cluster.accepted)} answered 202 all processed exactly once "
        f"({cluster.watch.created().total()} sessions), replayed {len(replayed)}, "
        f"recovered in {time.monotonic() - restarted:.0f}s, total "
        f"{time.monotonic() - started:.0f}s; secret scan {scanned}"
    )
