"""Regenerate hookspawn/cli/check/event_paths.json from the webhook examples in tests/webhooks/.

The examples are octokit/webhooks' (MIT licence, tests/webhooks/LICENSE). Run after adding or
updating an example:

    python scripts/build_event_paths.py          # write the index
    python scripts/build_event_paths.py --check  # exit 1 when the shipped index is stale
"""

from __future__ import annotations

import sys

from generated_file import ROOT, regenerate

sys.path.insert(0, str(ROOT))

from hookspawn.cli.check.event_paths import INDEX_FILE, build_index, index_text


def main() -> int:
    return regenerate(
        INDEX_FILE,
        lambda: index_text(build_index(ROOT / "tests" / "webhooks")),
        script=__file__,
        doc=__doc__ or "",
    )


if __name__ == "__main__":
    raise SystemExit(main())
