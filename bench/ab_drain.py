"""The pipeline drain (and, with --load-rate, the sustained load) of two commits, each installed
as a user would run it, passes interleaved in one run.

Each side is a commit's tree with its own virtual environment (see `ab_sides`: made once per
commit in the cache, its imports checked every pass, both sides on the same redis-server).
Each pass runs, once per side and the order alternating from pass to pass, that commit's own
`bench/bench_pipeline.py --n N --runs R --skip-latency` (its drain against Celery's no-op
drain in the same run) and, with `--load-rate`, its own `bench/load.py --rate RATE --seconds S`.
From the drain it reads, per run, the CPU a delivery of the worker's main process, of its pool
processes (together: the worker) and of redis-server, the Redis commands a delivery, and the
same for the no-op worker (the worker's CPU over the no-op's is the machine's speed of the
moment taken out); and the ratio to the no-op's drain rate. From the load run: p50 and p99
(webhook → session), the CPU a delivery of web, worker and Redis, and what was lost or
duplicated (printed, not fatal: a load run on a crowded machine may fail its own verdict).
It prints, per figure, each side's median over the passes (min..max) and head's median
against base's.

Run:    .venv/bin/python bench/ab_drain.py --base 4b2420f [--head HEAD] [--passes 4]
                                           [--n 2000] [--runs 2] [--load-rate 400]
                                           [--load-seconds 60] [--load-args '--noop-runs 1']
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# Run as a script (`python bench/ab_drain.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_sides import Side, alternate, arguments, compared, run_bench, table

RATIO = re.compile(r"ratio best/best ([\d.]+); per run ([\d., ]+)")
PROBE = re.compile(
    r"(no-op|hookspawn)\s+CPU ms/item: main ([\d.]+) .*?pool ([\d.]+) .*?redis ([\d.]+) .*?"
    r"Redis commands/item ([\d.]+)"
)
EXACTLY_ONCE = re.compile(r"exactly once over \d+ deliveries: .* -> (\w+)")
# load.py
LATENCY = re.compile(r"webhook -> session: p50 ([\d.]+) ms, p99 ([\d.]+) ms")
LOAD_CPU = re.compile(r"CPU ms per delivery \(process trees[^)]*\): (.*)")
LOAD_AUDIT = re.compile(r"accepted (\d+), processed (\d+), lost (\d+), duplicated sessions (\d+)")
VERDICT = re.compile(r"verdict: (PASS|FAIL.*)")


def take_drain(side: Side, output: str) -> str:
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
    probes = PROBE.findall(output)
    noop: tuple[float, float] | None = None
    parts = []
    for kind, main, pool, redis, commands in probes:
        worker = float(main) + float(pool)
        if kind == "no-op":
            noop = (worker, float(redis))
            continue
        side.add(main=float(main), pool=float(pool), worker=worker, redis=float(redis),
                 commands=float(commands))  # fmt: skip
        versus = ""
        if noop is not None:
            side.add(noop_worker=noop[0], over_noop=worker / noop[0])
            versus = f", {worker / noop[0]:.2f}x the no-op's {noop[0]:.2f}"
        parts.append(
            f"worker {worker:.2f} (main {main} pool {pool}{versus}) redis {redis} cmds {commands}"
        )
    if not parts:
        raise RuntimeError(f"{side.name}: no CPU figures in the output:\n{output[-3000:]}")
    return f"drain {ratio.group(1)} (runs {ratio.group(2).strip()}); " + "; ".join(parts)


def take_load(side: Side, output: str) -> str:
    """The figures of one run of load.py, added to `side`; its line."""
    latency, cpu = LATENCY.search(output), LOAD_CPU.search(output)
    audit, verdict = LOAD_AUDIT.search(output), VERDICT.search(output)
    if latency is None or cpu is None or audit is None or verdict is None:
        raise RuntimeError(f"{side.name}: no summary in load.py's output:\n{output[-3000:]}")
    accepted, processed, lost, duplicated = (int(x) for x in audit.groups())
    side.add(load_lost=float(max(lost, accepted - processed)), load_duplicated=float(duplicated))
    side.add(p50=float(latency.group(1)), p99=float(latency.group(2)))
    shares = dict(re.findall(r"(\w+) ([\d.]+)", cpu.group(1)))
    worker = sum(float(v) for k, v in shares.items() if k.startswith("worker"))
    side.add(load_worker=worker)
    for key in ("web", "redis"):
        if key in shares:
            side.add(**{f"load_{key}": float(shares[key])})
    return (f"load p50 {latency.group(1)} p99 {latency.group(2)} ms, CPU ms {cpu.group(1)}; "
            f"accepted {accepted}, processed {processed}, lost {lost}, duplicated {duplicated}; "
            f"{verdict.group(1)}")  # fmt: skip


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--load-rate", type=float, default=0.0,
                        help="also run load.py at this rate (deliveries/s) each pass")  # fmt: skip
    parser.add_argument("--load-seconds", type=float, default=60.0)
    parser.add_argument(
        "--load-args", default="", help="more flags for load.py, e.g. '--noop-runs 1 --noop-n 1000'"
    )
    parser.add_argument(
        "--quiet-load", type=float, default=1000.0, help="benches wait for a load below (never)"
    )
    args = parser.parse_args()
    drain = [
        "bench/bench_pipeline.py",
        "--n", str(args.n),
        "--runs", str(args.runs),
        "--skip-latency",
        "--quiet-load", str(args.quiet_load),
    ]  # fmt: skip
    load = [
        "bench/load.py",
        "--rate", f"{args.load_rate:g}",
        "--seconds", f"{args.load_seconds:g}",
        "--quiet-load", str(args.quiet_load),
        *args.load_args.split(),
    ]  # fmt: skip

    def run(side: Side) -> str:
        line = take_drain(side, run_bench(side, drain))
        if args.load_rate:
            line += "\n      " + take_load(side, run_bench(side, load))
        return line

    with compared(args.base, args.head, args.cache_dir, args.same_env) as sides:
        print(" ".join(drain) + (f"; {' '.join(load)}" if args.load_rate else ""))
        alternate(sides, args.passes, run)
    print("\nper delivery, median over the runs of all passes (min..max):")
    columns = [
        ("drain / no-op drain, best/best", "best", 2),
        ("drain / no-op drain, per run", "runs", 2),
        ("worker CPU ms (main + pool)", "worker", 3),
        ("  main ms", "main", 2),
        ("  pool ms", "pool", 2),
        ("worker CPU / no-op's, same run", "over_noop", 2),
        ("  no-op worker CPU ms", "noop_worker", 3),
        ("redis CPU ms", "redis", 2),
        ("Redis commands", "commands", 2),
    ]
    if args.load_rate:
        columns += [
            (f"load {args.load_rate:g}/s p50 ms", "p50", 1),
            (f"load {args.load_rate:g}/s p99 ms", "p99", 1),
            ("load: web CPU ms", "load_web", 2),
            ("load: worker CPU ms", "load_worker", 2),
            ("load: redis CPU ms", "load_redis", 2),
            ("load: lost (not processed)", "load_lost", 0),
            ("load: duplicated sessions", "load_duplicated", 0),
        ]
    table(sides, columns)


if __name__ == "__main__":
    main()
