"""The failover drill of tests/faults/test_sentinel_failover.py, reported rather than asserted,
with either HOOKSPAWN_REDIS_MIN_REPLICAS_ACK: with 0 it shows what a failover can lose (a
delivery answered 202 whose record had not reached the replica when the primary died), with
1 the gap the replicated acknowledgement costs.

A primary, a replica and three sentinels (redis-server, `--sentinel`), `hookspawn web` and two
`hookspawn worker`s, the GitHub stand-in and a dispatch target; deliveries streamed at
`--rate` (one in ten fires two spawns); the primary killed with SIGKILL `--before` seconds in,
started again as the new primary's replica once the sentinels switched. Printed per run: what
was sent and answered, the gap (first refusal to first 202 after the kill), and of the
deliveries answered 202 how many were lost, left unprocessed, or spawned twice.

Run:    .venv/bin/python bench/failover.py [--acks 0,1] [--runs 1] [--rate 120]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dispatch_target import dispatch_target  # noqa: E402
from tests.faults.conftest import FaultStandin  # noqa: E402
from tests.faults.sentinel_cluster import SentinelCluster, run_drill  # noqa: E402
from tests.workers.delivery.pipeline.conftest import (  # noqa: E402
    ACCOUNT,
    INSTALLATION,
    OTHER_REPO,
    OTHER_REPO_ID,
    REPO,
    REPO_ID,
)


def one(ack: int, rate: float, before: float) -> str:
    github = FaultStandin()
    github.start()
    try:
        github.add_installation(
            INSTALLATION, ACCOUNT, repositories={REPO_ID: REPO, OTHER_REPO_ID: OTHER_REPO}
        )
        with dispatch_target() as target, tempfile.TemporaryDirectory(prefix="failover-") as tmp:
            cluster = SentinelCluster(Path(tmp), github, target, ack=ack)
            try:
                cluster.start()
                drill = run_drill(cluster, rate=rate, before=before, settle_timeout=120.0)
            finally:
                cluster.stop()
            lost = f"; lost: {drill.lost[:5]}" if drill.lost else ""
            return drill.report() + lost
    finally:
        github.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acks", default="0,1", help="MIN_REPLICAS_ACK values, in turn")
    parser.add_argument("--runs", type=int, default=1, help="runs of each value")
    parser.add_argument("--rate", type=float, default=120.0, help="deliveries a second asked")
    parser.add_argument("--before", type=float, default=3.0, help="seconds before the kill")
    args = parser.parse_args()
    acks = [int(a) for a in args.acks.split(",") if a]
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}", flush=True)
    for n in range(args.runs):
        for ack in acks:
            print(f"run {n + 1}: {one(ack, args.rate, args.before)}", flush=True)
            print(f"  load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
