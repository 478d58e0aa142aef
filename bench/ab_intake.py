"""Intake of this checkout against an earlier commit's, interleaved in one run.

Each pass runs `bench/bench_intake.py --runs 1 --scenarios bare,hookspawn --seconds S` once
in a checkout of `--base` and once in this checkout, the order alternating from pass to pass
(see `ab_sides`); each side's `hookspawn web` is measured against the bare ASGI endpoint in
the same run. From every pass this reads the lines bench_intake prints (per run: `req/s`
and `CPU per request: server X us, redis Y us`; `/bare = R`; that every 202 was recorded and
queued) and reports, per side, the median over passes of: the ratio to the bare endpoint,
hookspawn's requests per second, and the CPU per request of the server and of redis-server.

Run:    .venv/bin/python bench/ab_intake.py --base d8aafff [--passes 4] [--seconds 15]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Run as a script (`python bench/ab_intake.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_sides import ROOT, alternate, base_checkout, median, revision, run_bench

RUN = re.compile(
    r"(bare|hookspawn) run \d+: (\d+) req/s.*?CPU per request: server (\d+) us, redis (\d+) us"
)
RATIO = re.compile(r"/bare\s+= ([\d.]+)")
CHECKED = re.compile(r"run \d+: accepted \(202\) \d+, recorded \d+, queued \d+, .* -> (\w+)")


@dataclass
class Side:
    name: str
    root: Path
    ratio: list[float] = field(default_factory=list)
    rps: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    server_us: list[float] = field(default_factory=list)
    redis_us: list[float] = field(default_factory=list)

    def take(self, output: str) -> str:
        ratio, checked = RATIO.search(output), CHECKED.search(output)
        if ratio is None or checked is None:
            raise RuntimeError(
                f"{self.name}: no summary in bench_intake's output:\n{output[-3000:]}"
            )
        if checked.group(1) != "OK":
            raise RuntimeError(f"{self.name}: a 202 was not recorded and queued:\n{output[-3000:]}")
        self.ratio.append(float(ratio.group(1)))
        for scenario, rps, server, redis in RUN.findall(output):
            if scenario == "bare":
                self.bare.append(float(rps))
            else:
                self.rps.append(float(rps))
                self.server_us.append(float(server))
                self.redis_us.append(float(redis))
        return (
            f"/bare {ratio.group(1)}; hookspawn {self.rps[-1]:.0f} req/s, server "
            f"{self.server_us[-1]:.0f} us, redis {self.redis_us[-1]:.0f} us; "
            f"bare {self.bare[-1]:.0f} req/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    command = ["bench/bench_intake.py", "--runs", "1", "--scenarios", "bare,hookspawn",
               "--seconds", str(args.seconds)]  # fmt: skip
    with base_checkout(args.base) as worktree:
        sides = [
            Side(f"base {revision(args.base)}", worktree),
            Side(f"this {revision('HEAD')}", ROOT),
        ]
        print(" ".join(command), end="; ")
        alternate(
            [side.name for side in sides],
            args.passes,
            lambda n: sides[n].take(run_bench(sides[n].root, command)),
        )
    print("\nmedians over the passes (hookspawn web, one process; /bare: same run):")
    header = ("side", "/bare", "req/s", "server us", "redis us", "bare req/s")
    print("  {:<13} {:>6} {:>7} {:>10} {:>9} {:>10}".format(*header))
    for side in sides:
        ratio, rps, bare = median(side.ratio, 3), median(side.rps, 0), median(side.bare, 0)
        server, redis = median(side.server_us, 0), median(side.redis_us, 0)
        print(f"  {side.name:<13} {ratio:>6} {rps:>7} {server:>10} {redis:>9} {bare:>10}")


if __name__ == "__main__":
    main()
