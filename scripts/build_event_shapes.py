"""Regenerate hookspawn/cli/check/event_shapes.json from the installed githubkit's webhook models.

Run after upgrading githubkit (imports every webhook model: about a minute and several hundred MB):

    python scripts/build_event_shapes.py          # write the table
    python scripts/build_event_shapes.py --check  # exit 1 when the shipped table is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hookspawn.cli.check.event_shapes import TABLE_FILE, build_table, table_text  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = table_text(build_table())
    if args.check:
        if not TABLE_FILE.exists() or TABLE_FILE.read_text() != text:
            print(f"{TABLE_FILE.relative_to(ROOT)} is stale: run {Path(__file__).name}")
            return 1
        print(f"{TABLE_FILE.relative_to(ROOT)} is current")
        return 0
    TABLE_FILE.write_text(text)
    print(f"wrote {TABLE_FILE.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
