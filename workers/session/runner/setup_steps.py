"""A setup entry's script, and which of its commands failed.

The entry's commands run as one `sh` script (a `cd` or a variable carries on to the next
command); before each, the script writes the command's index to a file in the session's home,
so that when the script fails the runner can name the command it stopped at.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["STEP_FILE", "failed_command", "script"]

#: in the session's home; removed once read (never part of a setup snapshot)
STEP_FILE = ".hookspawn-setup-step"


def script(commands: Sequence[str], home: Path) -> str:
    """The entry's commands under `set -eu`, each announced in the step file first."""
    step = shlex.quote(str(home / STEP_FILE))
    lines = ["set -eu"]
    for index, command in enumerate(commands):
        lines += [f"printf '%s' {index} > {step}", command]
    return "\n".join(lines)


def failed_command(commands: Sequence[str], home: Path) -> str | None:
    """The command the script stopped at (None when not known); removes the step file."""
    path = home / STEP_FILE
    try:
        index = int(path.read_text() or "-1")
    except (OSError, ValueError):
        return None
    finally:
        path.unlink(missing_ok=True)
    return commands[index] if 0 <= index < len(commands) else None
