"""A runner's disk kept bounded: the workspace and log directory of every session whose run
record has expired (HOOKSPAWN_SESSION_RETENTION after its end) are removed."""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
from pathlib import Path

import redis

from workers import keys

__all__ = ["SessionPruner"]

log = logging.getLogger(__name__)

#: a session id, and so the only directory name pruning ever considers
_SESSION_ID = re.compile(r"hs-[0-9a-f]{32}")


def _make_writable(top: Path) -> None:
    """A session may leave read-only directories behind: give the owner rwx on every
    directory (never following a symlink) so they can be removed."""
    os.chmod(top, os.stat(top).st_mode | stat.S_IRWXU)
    for root, dirs, _files in os.walk(top):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)


def _remove(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except PermissionError:
        _make_writable(path)
        shutil.rmtree(path)


class SessionPruner:
    """Removes `<data dir>/workspaces/<id>` and `<data dir>/sessions/<id>` once the session's
    run record is gone. A session still queued, held or within its retention keeps both."""

    def __init__(self, client: redis.Redis, data_dir: Path) -> None:
        self.client = client
        self.roots = [data_dir / "workspaces", data_dir / "sessions"]

    def _candidates(self) -> dict[str, list[Path]]:
        found: dict[str, list[Path]] = {}
        for root in self.roots:
            try:
                entries = list(root.iterdir())
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("cannot list %s to remove expired sessions' files: %s", root, exc)
                continue
            for entry in entries:
                if _SESSION_ID.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
                    found.setdefault(entry.name, []).append(entry)
        return found

    def prune(self) -> list[str]:
        """Remove the files of sessions with no run record left; the ids pruned."""
        found = self._candidates()
        ids = sorted(found)
        pipe = self.client.pipeline(transaction=False)
        for session_id in ids:
            pipe.exists(keys.session_run(session_id))
        pruned = []
        for session_id, present in zip(ids, pipe.execute(), strict=True):
            if present:
                continue
            for path in found[session_id]:
                try:
                    _remove(path)
                except OSError as exc:
                    log.warning("session %s: could not remove %s: %s", session_id, path, exc)
            pruned.append(session_id)
        return pruned
