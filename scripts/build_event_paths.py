"""Regenerate hookspawn/cli/check/event_paths.json from the webhook examples in tests/webhooks/.

The examples are octokit/webhooks' (MIT licence, tests/webhooks/LICENSE). Run after adding or
updating an example:

    python scripts/build_event_paths.py          # write the index
    python scripts/build_event_paths.py --check  # exit 1 when the shipped index is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hookspawn.cli.check.event_paths import INDEX_FILE, build_index, index_text  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = index_text(build_index(ROOT / "tests" / "webhooks"))
    if args.check:
        if INDEX_FILE.read_text() != text:
            print(f"{INDEX_FILE.relative_to(ROOT)} is stale: run {Path(__file__).name}")
            return 1
        print(f"{INDEX_FILE.relative_to(ROOT)} is current")
        return 0
    INDEX_FILE.write_text(text)
    print(f"wrote {INDEX_FILE.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
