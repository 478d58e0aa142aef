"""`python -m hookspawn.cli`: the `hookspawn` command (how `serve` starts its children)."""

import sys

from hookspawn.cli import main

sys.exit(main())
