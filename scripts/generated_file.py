"""The command line of a script that regenerates a file hookspawn ships (`--check` compares
instead of writing): one for every generator in this folder."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def regenerate(target: Path, make: Callable[[], str], *, script: str, doc: str) -> int:
    """Write `make()` to `target`, or with `--check` exit 1 when `target` differs from it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = make()
    shown = target.relative_to(ROOT)
    if args.check:
        if not target.exists() or target.read_text() != text:
            print(f"{shown} is stale: run {Path(script).name}")
            return 1
        print(f"{shown} is current")
        return 0
    target.write_text(text)
    print(f"wrote {shown} ({len(text)} bytes)")
    return 0
