"""The real ``git check-ref-format --allow-onelevel``, the authority the ref rules answer to."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT = Path("/usr/bin/git")


def git_accepts(ref: str, cwd: Path) -> bool:
    result = subprocess.run(
        [str(GIT), "check-ref-format", "--allow-onelevel", ref],
        cwd=cwd,
        capture_output=True,
        check=False,
        timeout=10,
    )
    return result.returncode == 0
