"""Worst `matches` filter evaluations on a 1 MiB subject: time per search under the cost bound."""

from __future__ import annotations

import platform
import random
import sys
import time
from pathlib import Path

# Run as a script (`python bench/bench_filter_cost.py`): import the tree this file is in.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.regex_bound import MAX_PROGRAM_SIZE, MAX_SUBJECT, PatternError, compile_bounded

PATTERNS = (
    r"^/fix\b",
    r"(?s)(.*.){300}",  # the refused (?s)(.*.){500}, scaled under the bound
    r"(?s)[xy].{300}q",  # defeats RE2's DFA: its NFA runs
    r"(?s)(?:x.{10}){40}q",
    r"\pL+$",
)


def main() -> None:
    random.seed(1)
    subjects = {
        "x * 1 MiB": "x" * MAX_SUBJECT,
        "random xyz, 1 MiB": "".join(random.choice("xyz") for _ in range(MAX_SUBJECT)),
    }
    print(f"python {platform.python_version()} on {platform.machine()}")
    print(f"MAX_PROGRAM_SIZE {MAX_PROGRAM_SIZE}")
    try:
        compile_bounded(r"(?s)(.*.){500}")
    except PatternError as exc:
        print(f"refused: {exc}")
    for source in PATTERNS:
        pattern = compile_bounded(source)
        for name, subject in subjects.items():
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                pattern.search(subject)
                best = min(best, time.perf_counter() - start)
            print(
                f"{source:24} program {pattern.program_size:5}  searched "
                f"{pattern.subject_limit:8,} chars of {name:18} {best * 1000:8.1f} ms"
            )


if __name__ == "__main__":
    main()
