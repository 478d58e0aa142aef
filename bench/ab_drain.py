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
from pathlib import Path

# Run as a script (`python bench/ab_drain.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_sides import Side, alternate, compared, run_bench, table

RATIO = re.compile(r"ratio best/best ([\d.]+); per run ([\d., ]+)")
PER_RUN = re.compile(
    r"hookspawn\s+CPU ms/item: main ([\d.]+) .*?pool ([\d.]+) .*?redis ([\d.]+) .*?"
    r"Redis commands/item ([\d.]+)"
)
EXACTLY_ONCE = re.compile(r"exactly once over \d+ deliveries: .* -> (\w+)")


def take(side: Side, output: str) -> str:
    """The figures of one pass of bench_pipeline, added to `side`; its line."""
    ratio = RATIO.search(output)
    once = EXACTLY_ONCE.search(output)
    if ratio is None or once is None:
        raise RuntimeError(f"{side.name}: no summary in the output:\n{output[-3000:]}")
    if once.group(1) != "OK":
        raise RuntimeError(f"{side.name}: exactly once BROKEN:\n{output[-3000:]}")
    side.add(best=float(ratio.group(1)))
    for run in ratio.group(2).replace(",", " ").split():
        side.add(runs=float(run))
    per_run = PER_RUN.findall(output)
    for main, pool, redis, commands in per_run:
        side.add(main=float(main), pool=float(pool), redis=float(redis), commands=float(commands))
    cpu = "; ".join(f"main {m} pool {p} redis {r} cmds {c}" for m, p, r, c in per_run)
    return f"ratio best/best {ratio.group(1)} (runs {ratio.group(2).strip()}); {cpu}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--quiet-load", type=float, default=1.5)
    args = parser.parse_args()
    command = [
        "bench/bench_pipeline.py",
        "--n", str(args.n),
        "--runs", str(args.runs),
        "--skip-latency",
        "--quiet-load", str(args.quiet_load),
    ]  # fmt: skip
    with compared(args.base) as sides:
        print(f"bench_pipeline.py --n {args.n} --runs {args.runs} --skip-latency", end="; ")
        alternate(sides, args.passes, lambda side: take(side, run_bench(side, command)))
    print("\nmedians over the passes (per delivery; ratio: to Celery's no-op drain, same run):")
    table(
        sides,
        [("best/best", "best", 2), ("per run", "runs", 2), ("main ms", "main", 2),
         ("pool ms", "pool", 2), ("redis ms", "redis", 2), ("commands", "commands", 2)],
    )  # fmt: skip


if __name__ == "__main__":
    main()
