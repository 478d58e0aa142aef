"""Worker SIGTERM (Celery's warm shutdown) during a burst: the tasks it is running finish,
the ones it had not started go back to the queue, and a new worker does the rest once."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.faults.conftest import Cluster
from tests.procs import group_members

BURST = 30


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sigterm_during_a_burst_finishes_in_flight_work_and_returns_the_rest(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(lease=3.0, max_retries=8)
    cluster.target.delay = 0.3
    started = time.monotonic()
    burst = [cluster.send_pr() for _ in range(BURST)]
    assert all(a.status == 202 for a in burst), [a.status for a in burst]
    inflight = {body["origin"]["deliveryId"] for body in cluster.watch.wait_inflight()}
    old = cluster.worker
    assert old is not None
    code = cluster.term_worker(timeout=60)
    stopped_in = time.monotonic() - started
    assert code == 0, f"warm shutdown exited with {code}:\n{old.tail()}"
    assert not group_members(old.pid), "pool processes outlived the worker"

    statuses = cluster.statuses()
    unfinished = sorted(d for d in inflight if statuses.get(d) != "processed")
    assert not unfinished, f"mid-dispatch at SIGTERM, yet abandoned: {unfinished}"
    left = sorted(a.delivery for a in burst if statuses.get(a.delivery) != "processed")
    assert left, "the burst was done before the SIGTERM: the test proved nothing"
    queued, unacked = cluster.queued()
    not_queued = [d for d in left if d not in queued]
    assert not not_queued, f"neither processed nor back in the queue: {not_queued}"
    assert unacked == 0, f"{unacked} messages still held unacknowledged after the shutdown"

    cluster.start_worker()
    views = cluster.settle()
    cluster.audit(views).assert_clean()
    scanned = cluster.assert_no_secrets()
    print(
        f"\nworker SIGTERM: {len(inflight)} deliveries mid-dispatch finished before exit "
        f"(code 0), {len(left)} of {BURST} returned to the queue, all processed exactly once "
        f"by the next worker ({cluster.watch.created().total()} sessions), duplicates 0, "
        f"{time.monotonic() - started:.0f}s (stopped after {stopped_in:.0f}s); "
        f"secret scan {scanned}"
    )
