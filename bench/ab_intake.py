"""Intake of two commits, each installed as a user would run it, passes interleaved in one run.

Each side is a commit's tree with its own virtual environment (see `ab_sides`: made once per
commit in the cache, its imports checked every pass). Each pass runs that commit's own
`bench/bench_intake.py --runs 1 --scenarios bare,hookspawn --seconds S` once per side, the
order alternating from pass to pass; each side's `hookspawn web` is measured against the bare
ASGI endpoint in the same run. bench_intake's output has changed over time, so it is read
loosely: per run, a line `<scenario> run N: R req/s, …` with whatever `p99 X ms` and CPU
figures (`<what> X us|ms`) it carries, `CPU per delivery X us end to end` where it prints
that, the `/bare = R` ratio (else computed from the two
rates), and every audit line (`accepted (202) …, recorded …, queued … -> OK`), which must all
say OK. It prints, per figure, each side's median over the passes (min..max) and head's median
against base's.

Run:    .venv/bin/python bench/ab_intake.py --base d8aafff [--head HEAD] [--passes 4]
                                            [--seconds 15]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# Run as a script (`python bench/ab_intake.py`): its neighbours import from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_sides import Side, alternate, arguments, compared, run_bench, table

RUN = re.compile(r"^\s*(bare|hookspawn)\s+run \d+: ([\d.]+) req/s(.*)$", re.MULTILINE)
P99 = re.compile(r"p99 ([\d.]+) ms")
CPU = re.compile(r"([A-Za-z][\w-]*(?: [A-Za-z][\w-]*)*?) ([\d.]+) (us|µs|ms)\b")
RATIO = re.compile(r"/bare\s*=\s*([\d.]+)")
END_TO_END = re.compile(r"CPU per delivery ([\d.]+) us end to end")
AUDIT = re.compile(r"accepted \(202\) \d+, recorded .*?-> (\w+)")
SEEN: dict[str, str] = {}  # figure key -> heading, as met in the output


def take(side: Side, output: str) -> str:
    """The figures of one run of bench_intake, added to `side`; its line."""
    audits = AUDIT.findall(output)
    if not audits:
        raise RuntimeError(f"{side.name}: no audit line in the output:\n{output[-3000:]}")
    if any(a != "OK" for a in audits):
        raise RuntimeError(f"{side.name}: a 202 was not recorded and queued:\n{output[-3000:]}")
    rates: dict[str, float] = {}
    line = []
    for scenario, rps, rest in RUN.findall(output):
        rates[scenario] = float(rps)
        if scenario == "bare":
            side.add(bare=float(rps))
            continue
        side.add(rps=float(rps))
        p99 = P99.search(rest)
        if p99:
            side.add(p99=float(p99.group(1)))
        cpu = rest.split("CPU", 1)[1] if "CPU" in rest else ""
        for what, value, unit in CPU.findall(cpu):
            figure = "cpu_" + re.sub(r"\W+", "_", what)
            SEEN[figure] = f"CPU us: {what}"
            side.add(**{figure: float(value) * (1000.0 if unit == "ms" else 1.0)})
        line.append(f"hookspawn {rps} req/s{rest.split('; load')[0]}")
    if "hookspawn" not in rates:
        raise RuntimeError(f"{side.name}: no hookspawn run in bench_intake's output:\n"
                           f"{output[-3000:]}")  # fmt: skip
    for value in END_TO_END.findall(output):  # bench_intake's own sum, where it prints one
        SEEN["cpu_end_to_end"] = "CPU us: end to end"
        side.add(cpu_end_to_end=float(value))
    ratio = RATIO.search(output)
    if ratio is not None:
        side.add(ratio=float(ratio.group(1)))
    elif "bare" in rates:
        side.add(ratio=rates["hookspawn"] / rates["bare"])
    head = f"/bare {side.figures['ratio'][-1]:.3f}; bare {rates.get('bare', 0):.0f} req/s; "
    return head + "; ".join(line)


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    command = ["bench/bench_intake.py", "--runs", "1", "--scenarios", "bare,hookspawn",
               "--seconds", str(args.seconds)]  # fmt: skip
    with compared(args.base, args.head, args.cache_dir, args.same_env) as sides:
        print(" ".join(command))
        alternate(sides, args.passes, lambda side: take(side, run_bench(side, command)))
    print("\nmedians over the passes (min..max); hookspawn web, one process; /bare: same run:")
    columns = [("/bare", "ratio", 3), ("req/s", "rps", 0), ("p99 ms", "p99", 2)]
    columns += [(heading, key, 0) for key, heading in SEEN.items()]
    columns += [("bare req/s", "bare", 0)]
    table(sides, columns)


if __name__ == "__main__":
    main()
