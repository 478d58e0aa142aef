"""Benchmark: how long each hostile agent tree of tests/hostile takes to be refused."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents import compile_dir
from tests.hostile.test_agent_files import CASES

#: what one hostile tree may take to compile to its one error
TARGET_SECONDS = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    slowest = 0.0
    for name, (build, *_) in sorted(CASES.items()):
        with tempfile.TemporaryDirectory() as tmp:
            auto = build(Path(tmp))
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                result = compile_dir(auto)
                times.append(time.perf_counter() - started)
        assert len(result.errors) == 1, [str(e) for e in result.errors]
        slowest = max(slowest, max(times))
        print(
            f"{name:<40} min={min(times):.3f}s median={statistics.median(times):.3f}s "
            f"max={max(times):.3f}s"
        )
    verdict = "ok" if slowest < TARGET_SECONDS else "MISSED"
    print(f"slowest {slowest:.3f}s (target < {TARGET_SECONDS:g}s each: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
