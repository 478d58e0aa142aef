"""`git-credential-hookspawn`, the installed entry point: the protocol and the broker call
are in workers.session.runner.credential_helper (standard library only), the very file the
runner copies into each session for its account and its sandbox to run."""

from __future__ import annotations

import sys

from workers.session.runner.credential_helper import get, main, parse_request

__all__ = ["get", "main", "parse_request"]

if __name__ == "__main__":
    sys.exit(main())
