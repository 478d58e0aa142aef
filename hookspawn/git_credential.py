"""`git-credential-hookspawn`, the installed entry point: git's credential-helper protocol in
front of the broker. Configured per mount (`credential.helper = hookspawn --mount-path=/w/rw`,
`credential.useHttpPath = true`), so git names the repository and the helper names the
checkout's mount: one repository mounted twice gets each mount's own credential. The protocol
and the broker call are in workers.session.runner.credential_helper (standard library only),
the very file the runner copies into each session for its account and its sandbox to run."""

from __future__ import annotations

import sys

from workers.session.runner.credential_helper import get, main, parse_request

__all__ = ["get", "main", "parse_request"]

if __name__ == "__main__":
    sys.exit(main())
