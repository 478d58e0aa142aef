"""The pipeline drain of this checkout against an earlier commit's, interleaved in one run.

Each pass runs `bench/bench_pipeline.py --n N --runs R --skip-latency` once in a checkout
of `--base` (a git worktree made for the run, removed after) and once in this checkout,
the order alternating from pass to pass, so both sides see the same machine over the same
minutes. Each side's own drain is measured against Celery's no-op drain in the same run;
from every pass this script reads the summary lines bench_pipeline prints (`ratio
best/best X`, and per run `hookspawn  CPU ms/item: main X … pool Y … redis Z …; Redis
commands/item W`) and reports, per side, the median over passes of: the ratio, the CPU
per delivery of the worker's main process, of its pool processes and of redis-server,
and the Redis commands per delivery.

Both sides read their payloads from this checkout's tests/webhooks (see `ab_sides`).
Nothing outside the repository is read.

Run:    .venv/bin/python bench/ab_drain.py --base 4b2420f [--passes 4] [--n 2000] [--runs 2]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Run as a script (`python bench/ab_drain.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_sides import ROOT, alternate, base_checkout, median, revision, run_bench

RATIO = re.compile(r"ratio best/best ([\d.]+); per run ([\d., ]+)")
PER_RUN = re.compile(
    r"hookspawn\s+CPU ms/item: main ([\d.]+) .*?pool ([\d.]+) .*?redis ([\d.]+) .*?"
    r"Redis commands/item ([\d.]+)"
)
EXACTLY_ONCE = re.compile(r"exactly once over \d+ deliveries: .* -> (\w+)")


@dataclass
class Side:
    name: str
    root: Path
    best: list[float] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)
    main: list[float] = field(default_factory=list)
    pool: list[float] = field(default_factory=list)
    redis: list[float] = field(default_factory=list)
    commands: list[float] = field(default_factory=list)

    def take(self, output: str) -> str:
        ratio = RATIO.search(output)
        once = EXACTLY_ONCE.search(output)
        if ratio is None or once is None:
            raise RuntimeError(f"{self.name}: no summary in the output:\n{output[-3000:]}")
        if once.group(1) != "OK":
            raise RuntimeError(f"{self.name}: exactly once BROKEN:\n{output[-3000:]}")
        self.best.append(float(ratio.group(1)))
        self.runs += [float(x) for x in ratio.group(2).replace(",", " ").split()]
        per_run = PER_RUN.findall(output)
        for main, pool, redis, commands in per_run:
            self.main.append(float(main))
            self.pool.append(float(pool))
            self.redis.append(float(redis))
            self.commands.append(float(commands))
        cpu = "; ".join(f"main {m} pool {p} redis {r} cmds {c}" for m, p, r, c in per_run)
        return f"ratio best/best {ratio.group(1)} (runs {ratio.group(2).strip()}); {cpu}"


def run_side(side: Side, args: argparse.Namespace) -> str:
    command = [
        "bench/bench_pipeline.py",
        "--n", str(args.n),
        "--runs", str(args.runs),
        "--skip-latency",
        "--quiet-load", str(args.quiet_load),
    ]  # fmt: skip
    return side.take(run_bench(side.root, command))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--quiet-load", type=float, default=1.5)
    args = parser.parse_args()

    with base_checkout(args.base) as worktree:
        sides = [
            Side(f"base {revision(args.base)}", worktree),
            Side(f"this {revision('HEAD')}", ROOT),
        ]
        print(f"bench_pipeline.py --n {args.n} --runs {args.runs} --skip-latency", end="; ")
        alternate([s.name for s in sides], args.passes, lambda n: run_side(sides[n], args))
    print("\nmedians over the passes (per delivery; ratio: to Celery's no-op drain, same run):")
    print(
        f"  {'side':<13} {'best/best':>9} {'per run':>8} {'main ms':>8} {'pool ms':>8} "
        f"{'redis ms':>8} {'commands':>8}"
    )
    for side in sides:
        print(
            f"  {side.name:<13} {median(side.best):>9} {median(side.runs):>8} "
            f"{median(side.main):>8} {median(side.pool):>8} {median(side.redis):>8} "
            f"{median(side.commands):>8}"
        )


if __name__ == "__main__":
    main()
