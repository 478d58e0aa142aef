"""`kill -9` the Redis primary under a steady stream, with Sentinel and
HOOKSPAWN_REDIS_MIN_REPLICAS_ACK=1: the sentinels promote the replica, web and workers follow
it without a restart, and nothing answered 202 is lost or spawned twice.

Intake answers 202 only once the replica acknowledged the delivery's record (WAIT), so the
replica promoted holds every delivery answered 202. While there is no primary, and then until
the old primary (started again, as a supervisor would) is the new primary's replica, intake
answers 503 with Retry-After; those deliveries are counted, and the gap is reported.
(bench/failover.py runs the same drill with MIN_REPLICAS_ACK=0, to show what that loses.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dispatch_target import DispatchTarget
from tests.faults.conftest import FaultStandin
from tests.faults.sentinel_cluster import SentinelCluster, run_drill


@pytest.fixture
def cluster(
    tmp_path: Path, github: FaultStandin, target: DispatchTarget
) -> Iterator[SentinelCluster]:
    made = SentinelCluster(tmp_path, github, target, ack=1)
    try:
        yield made.start()
    finally:
        made.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_failover_loses_no_delivery_answered_202_and_spawns_each_once(
    cluster: SentinelCluster,
) -> None:
    drill = run_drill(cluster)
    print("\n" + drill.report())
    refused = drill.refused()
    assert refused, "no delivery was refused during the failover: the gap was not measured"
    assert {a.status for a in refused} <= {503, 0}, sorted({a.status for a in refused})
    assert len(drill.accepted) >= 100, f"only {len(drill.accepted)} deliveries answered 202"
    assert not drill.lost, f"answered 202, gone after the failover: {drill.lost[:20]}"
    assert not drill.unsettled, f"answered 202, not processed: {drill.unsettled[:20]}"
    assert not drill.missing, f"spawns never created: {drill.missing[:20]}"
    assert not drill.duplicated, f"spawns created twice: {drill.duplicated[:20]}"
    assert not drill.unexpected, f"sessions no delivery sent asks for: {drill.unexpected[:20]}"
    assert drill.spawns > 0, "no spawn: the firing deliveries did not run"
