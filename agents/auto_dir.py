"""What makes a directory a `.auto` directory, said as one line when it is not one (for
`hookspawn check` and the start-up line of `serve`, `web` and `worker`)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["directory_problem", "relative_openable"]


def directory_problem(auto_dir: Path, *, absolute: bool = False) -> str | None:
    """What makes `auto_dir` not a `.auto` directory (missing, a file, the `agents/` folder
    itself, no `agents/` folder), in one line naming what was expected; None when it is one.

    Paths are named as they open from the current directory, or `absolute`ly (for logs)."""

    def named(path: Path) -> str:
        return os.path.abspath(path) if absolute else relative_openable(path)

    shown = named(auto_dir)
    expected = "expected the .auto directory that holds agents/*.yaml"
    if not auto_dir.exists():
        return f"{shown}: no such directory ({expected})"
    if not auto_dir.is_dir():
        return f"{shown}: not a directory ({expected})"
    if not (auto_dir / "agents").is_dir():
        if auto_dir.resolve().name == "agents" and any(auto_dir.glob("*.yaml")):
            parent = named(auto_dir.resolve().parent)
            return (
                f"{shown}: this is the agents/ folder; pass the .auto directory above it: {parent}"
            )
        starter = f"`hookspawn init {shown}` writes a starter set"
        return f"{shown}: no agents/ folder ({expected}; {starter})"
    if not any((auto_dir / "agents").glob("*.yaml")):
        return f"{named(auto_dir / 'agents')}: no agent files ({expected})"
    return None


def relative_openable(path: Path) -> str:
    """`path` relative to the current directory when it is under it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix() or "."
    except ValueError:
        return absolute.as_posix()
