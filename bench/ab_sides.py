"""Two checkouts benchmarked in one run, passes alternating: what `ab_drain` and `ab_intake`
share.

`--base` is checked out in a git worktree made for the run (removed after), inside a
temporary directory where `shared/github-webhooks` is a link to this checkout's
tests/webhooks: commits from before those payloads were in the repository look for them
there. Each pass runs the benchmark once on each side, the order alternating from pass to
pass, so both sides see the same machine over the same minutes.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def revision(rev: str) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@contextmanager
def base_checkout(base: str) -> Iterator[Path]:
    """A worktree of `base` for the length of the run."""
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
            yield worktree
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)],
                cwd=ROOT, capture_output=True,
            )  # fmt: skip


def run_bench(root: Path, command: list[str]) -> str:
    """`command` (a bench script and its flags) in checkout `root`, which it imports from."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=root, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": ""},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{root} exited {done.returncode}:\n{done.stdout[-3000:]}")
    return done.stdout + done.stderr


def alternate(names: list[str], passes: int, run: Callable[[int], str]) -> None:
    """`passes` passes of `run(side)` over both sides, the order alternating; each pass's
    line printed as it comes."""
    print(f"{passes} passes, alternating; load {os.getloadavg()[0]:.2f} at "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)  # fmt: skip
    for n in range(passes):
        order = [0, 1] if n % 2 == 0 else [1, 0]
        for side in order:
            line = run(side)
            print(f"  pass {n + 1} {names[side]:<13} {line}; load {os.getloadavg()[0]:.2f}",
                  flush=True)  # fmt: skip


def median(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f}" if values else "-"
