"""Regenerate hookspawn/cli/check/event_shapes.json from the installed githubkit's webhook models.

Run after upgrading githubkit (imports every webhook model: about a minute and several hundred MB):

    python scripts/build_event_shapes.py          # write the table
    python scripts/build_event_shapes.py --check  # exit 1 when the shipped table is stale
"""

from __future__ import annotations

import sys

from generated_file import ROOT, regenerate

sys.path.insert(0, str(ROOT))

from hookspawn.cli.check.event_shapes import TABLE_FILE, build_table, table_text


def main() -> int:
    return regenerate(
        TABLE_FILE, lambda: table_text(build_table()), script=__file__, doc=__doc__ or ""
    )


if __name__ == "__main__":
    raise SystemExit(main())
