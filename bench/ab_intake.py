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
from pathlib import Path

# Run as a script (`python bench/ab_intake.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_sides import Side, alternate, compared, run_bench, table

RUN = re.compile(
    r"(bare|hookspawn) run \d+: (\d+) req/s.*?CPU per request: server (\d+) us, redis (\d+) us"
)
RATIO = re.compile(r"/bare\s+= ([\d.]+)")
CHECKED = re.compile(r"run \d+: accepted \(202\) \d+, recorded \d+, queued \d+, .* -> (\w+)")


def take(side: Side, output: str) -> str:
    """The figures of one run of bench_intake, added to `side`; its line."""
    ratio, checked = RATIO.search(output), CHECKED.search(output)
    if ratio is None or checked is None:
        raise RuntimeError(f"{side.name}: no summary in bench_intake's output:\n{output[-3000:]}")
    if checked.group(1) != "OK":
        raise RuntimeError(f"{side.name}: a 202 was not recorded and queued:\n{output[-3000:]}")
    side.add(ratio=float(ratio.group(1)))
    line = f"/bare {ratio.group(1)}"
    for scenario, rps, server, redis in RUN.findall(output):
        if scenario == "bare":
            side.add(bare=float(rps))
            line += f"; bare {rps} req/s"
        else:
            side.add(rps=float(rps), server_us=float(server), redis_us=float(redis))
            line += f"; hookspawn {rps} req/s, server {server} us, redis {redis} us"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    command = ["bench/bench_intake.py", "--runs", "1", "--scenarios", "bare,hookspawn",
               "--seconds", str(args.seconds)]  # fmt: skip
    with compared(args.base) as sides:
        print(" ".join(command), end="; ")
        alternate(sides, args.passes, lambda side: take(side, run_bench(side, command)))
    print("\nmedians over the passes (hookspawn web, one process; /bare: same run):")
    table(
        sides,
        [("/bare", "ratio", 3), ("req/s", "rps", 0), ("server us", "server_us", 0),
         ("redis us", "redis_us", 0), ("bare req/s", "bare", 0)],
    )  # fmt: skip


if __name__ == "__main__":
    main()
