"""The compiler is pure core: importing it pulls in no broker, store or GitHub client."""

from __future__ import annotations

import subprocess
import sys


def test_agents_imports_no_io_libraries() -> None:
    code = (
        "import sys, agents, agents.report\n"
        "bad = [m for m in ('celery', 'redis', 'githubkit') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""
