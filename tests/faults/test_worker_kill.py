"""SIGKILL a worker mid-spawn, each way twice, while deliveries flow: nothing lost, nothing
twice."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest

from tests.conftest import wait_for
from tests.faults.conftest import STARTUP_TIMEOUT, Cluster

#: how each kill lands, in turn: the whole worker (main and pool processes) as an OOM
#: kill or a lost container would; only the pool processes (the main one replaces
#: them); only the main process (its pool processes must not outlive it)
WAYS = ("group", "children", "main")
#: each way twice, in turn, each after a restart of what the one before killed: the first round
#: kills a fresh worker, then one restarted after a group kill, then one whose pool was replaced;
#: the second adds the one case left (a worker started after its main process was killed and its
#: pool went with it) and repeats each way once more; a third round would only repeat the second
KILLS = 2 * len(WAYS)
#: deliveries answered 202 before the stream stops, so that the kills fall among many
DELIVERIES = 30


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_sigkill_mid_spawn_twice_each_way_loses_nothing_and_spawns_once(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(lease=3.0, max_retries=8)
    cluster.target.delay = 0.25  # a dispatch takes long enough to be killed in the middle
    started = time.monotonic()
    killed: Counter[str] = Counter()
    cut: list[str] = []  # spawn ids whose dispatch POST was in flight at a kill
    last_kill = 0.0
    with cluster.stream(interval=0.7):
        for n in range(KILLS):
            way = WAYS[n % len(WAYS)]
            main = cluster.worker
            assert main is not None
            # only a POST from the worker we are about to kill counts as mid-spawn
            inflight = cluster.watch.wait_inflight(since=last_kill)
            cluster.kill_worker(way)
            last_kill = time.monotonic()
            killed[way] += 1
            cut += [body["id"] for body in inflight]
            if way == "children":
                continue  # the main process forks new pool processes by itself
            cluster.wait_group_gone(main)  # pdeathsig takes the pool processes along
            cluster.start_worker(wait=False)
        wait_for(
            lambda: len(cluster.accepted) >= DELIVERIES,
            STARTUP_TIMEOUT,
            0.2,
            what=lambda: f"{DELIVERIES} deliveries answered 202 (so far {len(cluster.accepted)})",
        )
    kill_phase = time.monotonic() - started
    views = cluster.settle()
    replayed = cluster.replay_failed(views)
    audit = cluster.audit(views)
    audit.assert_clean()
    assert sum(killed.values()) == KILLS
    assert audit.deliveries >= DELIVERIES, f"too few deliveries flowed to mean anything: {audit}"
    # the spawns that were cut mid-POST were all completed, each exactly once
    created = cluster.watch.created()
    assert all(created[spawn] == 1 for spawn in cut), {s: created[s] for s in cut}
    scanned = cluster.assert_no_secrets()
    print(
        f"\nworker kills: {dict(killed)} in {kill_phase:.0f}s, "
        f"{audit.deliveries} deliveries answered 202, {audit.expected_spawns} spawns, "
        f"{audit.created_sessions} sessions created from {audit.dispatch_posts} POSTs "
        f"({len(set(cut))} spawns cut mid-POST), duplicates 0, replayed {len(replayed)}, "
        f"total {time.monotonic() - started:.0f}s; secret scan {scanned}"
    )
