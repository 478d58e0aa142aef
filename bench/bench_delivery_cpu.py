"""Where one delivery's CPU goes in a worker, without Celery: a breakdown, not a target.

The drain bench's deployment (bench/harness.py: redis-server with AOF, the GitHub stand-in,
1,000 agents, the token cache warm), but the deliveries are processed in a loop in this one
process by the worker's own `DeliveryProcessor`, with CPU time (`time.process_time`, user +
system) summed around its parts. The baseline, measured in the same run: the same number of
Redis round trips (a `PING` each) on the same client, which is the floor of the two scripts.

Run:  .venv/bin/python bench/bench_delivery_cpu.py [--n 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Bench, pr_bodies, stage_deliveries

import triggers.matching
import workers.delivery.pipeline
import workers.delivery.processing
from triggers.session.spec import SessionSpec
from workers.delivery.deliveries import DeliveryStore
from workers.runtime import build_runtime
from workers.settings import Settings

SPENT: Counter[str] = Counter()


def timed(owner: Any, name: str, label: str) -> None:
    """Replace `owner.name` by a wrapper adding its CPU time to SPENT[label]."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time_ns()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time_ns() - start

    setattr(owner, name, wrapper)


PARTS = (
    (DeliveryStore, "claim", "claim script (lock, lease, record, body)"),
    (DeliveryStore, "finish", "finish script (run, status, sessions)"),
    (workers.delivery.processing, "load_body", "parse the payload"),
    (workers.delivery.processing, "envelope_view", "envelope view"),
    (triggers.matching.TriggerIndex, "evaluate", "matching (10 triggers)"),
    (workers.delivery.pipeline.SpawnPipeline, "spawn_trigger", "planning one spawn"),
    (SessionSpec, "without_input", "  the spec JSON (part of the finish above)"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {args.n} deliveries")
    with Bench() as bench:
        bench.seed_connections()
        os.environ.update(bench.env())
        rt = build_runtime(Settings())
        processor = rt.per_process.processor()
        client = bench.client()
        bodies = pr_bodies()
        for delivery_id in stage_deliveries(client, bodies, 300, "warm"):
            processor.process(delivery_id)
        for owner, name, label in PARTS:
            timed(owner, name, label)
        best: tuple[float, Counter[str]] | None = None
        for round_ in range(args.rounds):
            ids = stage_deliveries(client, bodies, args.n, f"r{round_}")
            SPENT.clear()
            start = time.process_time()
            outcomes = Counter(processor.process(i) for i in ids)
            total = (time.process_time() - start) / args.n * 1e6
            assert outcomes == {"processed": args.n}, outcomes
            print(f"  round {round_ + 1}: {total:.0f} us of CPU a delivery")
            if best is None or total < best[0]:
                best = (total, Counter(SPENT))
        store_client = processor.store.client
        start = time.process_time()
        for _ in range(2 * args.n):
            store_client.ping()
        floor = (time.process_time() - start) / args.n * 1e6
        assert best is not None
        total, spent = best
        print(f"\nbest round: {total:.0f} us of CPU a delivery (wrappers included)")
        for label, ns in spent.most_common():
            share = ns / args.n / 1e3
            print(f"  {share:6.0f} us  {share / total:4.0%}  {label}")
        print(
            f"baseline: two PINGs on the same client {floor:.0f} us; delivery / baseline "
            f"{total / floor:.1f}x"
        )


if __name__ == "__main__":
    main()
