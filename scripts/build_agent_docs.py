"""Regenerate the agent-file JSON Schemas (hookspawn/schemas/*.schema.json) and docs/agents.md
from agents/file_schema.py and agents/file_descriptions.py. Run after changing either:

    python scripts/build_agent_docs.py          # write them
    python scripts/build_agent_docs.py --check  # exit 1 when one is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.file_docs import agent_docs  # noqa: E402
from hookspawn.schemas import KINDS, schema_path, schema_text  # noqa: E402

DOCS = ROOT / "docs" / "agents.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    wanted = {schema_path(kind): schema_text(kind) for kind in KINDS}
    wanted[DOCS] = agent_docs()
    stale = [
        path for path, text in wanted.items() if not path.is_file() or path.read_text() != text
    ]
    for path in stale:
        shown = path.relative_to(ROOT)
        if args.check:
            print(f"{shown} is stale: run {Path(__file__).name}")
        else:
            path.write_text(wanted[path])
            print(f"wrote {shown}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
