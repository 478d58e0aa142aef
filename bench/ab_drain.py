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

Both sides read their payloads from this checkout's tests/webhooks: commits from before
those payloads were in the repository look for them in a directory beside their checkout
(`shared/github-webhooks`), so the base's worktree is made inside a temporary directory
where that name is a link to tests/webhooks. Nothing outside the repository is read.

Run:    .venv/bin/python bench/ab_drain.py --base 4b2420f [--passes 4] [--n 2000] [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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
        sys.executable,
        "bench/bench_pipeline.py",
        "--n", str(args.n),
        "--runs", str(args.runs),
        "--skip-latency",
        "--quiet-load", str(args.quiet_load),
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=side.root, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": ""}
    )
    if done.returncode != 0:
        raise RuntimeError(f"{side.name} exited {done.returncode}:\n{done.stdout[-3000:]}")
    return side.take(done.stdout + done.stderr)


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--quiet-load", type=float, default=1.5)
    args = parser.parse_args()

    base_rev = subprocess.run(
        ["git", "rev-parse", "--short", args.base], cwd=ROOT, capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    head_rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ab-drain-") as tmp:
        shared = Path(tmp) / "shared"
        shared.mkdir()
        (shared / "github-webhooks").symlink_to(ROOT / "tests" / "webhooks")
        worktree = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), base_rev],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            sides = [Side(f"base {base_rev}", worktree), Side(f"this {head_rev}", ROOT)]
            print(
                f"bench_pipeline.py --n {args.n} --runs {args.runs} --skip-latency, "
                f"{args.passes} passes, alternating; load {os.getloadavg()[0]:.2f} at "
                f"{time.strftime('%Y-%m-%d %H:%M:%S')}",
                flush=True,
            )
            for n in range(args.passes):
                order = sides if n % 2 == 0 else list(reversed(sides))
                for side in order:
                    line = run_side(side, args)
                    print(
                        f"  pass {n + 1} {side.name:<13} {line}; load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)],
                cwd=ROOT, capture_output=True,
            )  # fmt: skip
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
