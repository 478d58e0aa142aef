"""Two checkouts benchmarked in one run, passes alternating: what `ab_drain` and `ab_intake`
share.

`--base` is checked out in a git worktree made for the run (removed after). Commits from
before the webhook payloads were in the repository look for them beside their checkout, so
the worktree is made inside a temporary directory where that place is a link to this
checkout's tests/webhooks: both sides read the same payloads, and nothing outside the
repository is read. Each pass runs the benchmark once on each side, the order alternating
from pass to pass, so both sides see the same machine over the same minutes; `table` prints
each side's medians over the passes.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def revision(rev: str) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@dataclass
class Side:
    """One checkout of the comparison, and the figures its passes gave, by name."""

    name: str
    root: Path
    figures: dict[str, list[float]] = field(default_factory=dict)

    def add(self, **values: float) -> None:
        for key, value in values.items():
            self.figures.setdefault(key, []).append(value)

    def median(self, key: str, digits: int = 2) -> str:
        values = self.figures.get(key, [])
        return f"{statistics.median(values):.{digits}f}" if values else "-"


@contextmanager
def compared(base: str) -> Iterator[list[Side]]:
    """The two sides, `base` (a worktree for the length of the run) and this checkout."""
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp:
        shared = Path(tmp) / "shared"
        shared.mkdir()
        (shared / "github-webhooks").symlink_to(ROOT / "tests" / "webhooks")
        worktree = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), revision(base)],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            yield [Side(f"base {revision(base)}", worktree), Side(f"this {revision('HEAD')}", ROOT)]
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)],
                cwd=ROOT, capture_output=True,
            )  # fmt: skip


def run_bench(side: Side, command: list[str]) -> str:
    """`command` (a bench script and its flags) in `side`'s checkout, which it imports from."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=side.root, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": ""},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{side.name} exited {done.returncode}:\n{done.stdout[-3000:]}")
    return done.stdout + done.stderr


def alternate(sides: list[Side], passes: int, run: Callable[[Side], str]) -> None:
    """`passes` passes of `run(side)` over both sides, the order alternating; each pass's
    line printed as it comes."""
    print(f"{passes} passes, alternating; load {os.getloadavg()[0]:.2f} at "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)  # fmt: skip
    for n in range(passes):
        for side in sides if n % 2 == 0 else sides[::-1]:
            line = run(side)
            print(f"  pass {n + 1} {side.name:<13} {line}; load {os.getloadavg()[0]:.2f}",
                  flush=True)  # fmt: skip


def table(sides: list[Side], columns: list[tuple[str, str, int]]) -> None:
    """A row of medians per side: `columns` are (heading, figure, digits)."""
    print(f"  {'side':<13}" + "".join(f" {heading:>10}" for heading, _, _ in columns))
    for side in sides:
        cells = "".join(f" {side.median(key, digits):>10}" for _, key, digits in columns)
        print(f"  {side.name:<13}{cells}")
