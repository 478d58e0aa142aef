"""Removing a directory tree a session left behind, read-only directories included."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

__all__ = ["remove_tree"]


def _make_writable(top: Path) -> None:
    """Give the owner rwx on every directory under `top` (never following a symlink)."""
    os.chmod(top, os.stat(top).st_mode | stat.S_IRWXU)
    for root, dirs, _files in os.walk(top):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it. A session may leave read-only directories (a Go
    module cache, say) that an unprivileged runner cannot empty: they are made writable
    first. Raises OSError for what still cannot be removed."""
    try:
        shutil.rmtree(path)
    except PermissionError:
        _make_writable(path)
        shutil.rmtree(path)
