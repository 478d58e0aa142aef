"""A runner's disk kept bounded: the workspace and log directory of every session whose run
record has expired (HOOKSPAWN_SESSION_RETENTION after its end) are removed, and so are the
setup snapshots past their reuse window (setupCache.ttl)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import redis

from workers import keys
from workers.session.runner.snapshots import SnapshotCache
from workers.session.runner.tree_removal import remove_tree

__all__ = ["SessionPruner"]

log = logging.getLogger(__name__)

#: a session id, and so the only directory name pruning ever considers
_SESSION_ID = re.compile(r"hs-[0-9a-f]{32}")
#: what the runner keeps beside a session root (srt's settings, staging's git config, the
#: session's tools directory)
_BESIDE = re.compile(r"(hs-[0-9a-f]{32})\.(srt\.json|gitconfig|tools)")


class SessionPruner:
    """Removes the session root `<workspaces>/<id>` (and the files beside it) and
    `<data dir>/sessions/<id>` once the session's run record is gone. A session still queued,
    held or within its retention keeps them. `workspaces`: where session roots are made
    (`workspaces_root`) when not `<data dir>/workspaces`."""

    def __init__(
        self,
        client: redis.Redis,
        data_dir: Path,
        snapshots: SnapshotCache,
        workspaces: Path | None = None,
    ) -> None:
        self.client = client
        self.roots = [data_dir / "workspaces", data_dir / "sessions"]
        if workspaces is not None and workspaces != self.roots[0].absolute():
            # session roots an earlier runner made under the data directory are pruned too
            self.roots.append(workspaces)
        self.snapshots = snapshots

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
                beside = _BESIDE.fullmatch(entry.name)
                if beside and not entry.is_symlink():
                    found.setdefault(beside.group(1), []).append(entry)
        return found

    def prune(self) -> None:
        """Remove what expired (the sweep's every `prune_every`), saying how much."""
        sessions = self.prune_sessions()
        if sessions:
            log.info("removed the files of %d expired session(s)", len(sessions))
        snapshots = self.snapshots.prune()
        if snapshots:
            log.info("removed %d setup snapshot(s) past their reuse window", len(snapshots))

    def prune_sessions(self) -> list[str]:
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
                    if path.is_dir() and not path.is_symlink():
                        remove_tree(path)
                    else:
                        path.unlink()
                except OSError as exc:
                    log.warning("session %s: could not remove %s: %s", session_id, path, exc)
            pruned.append(session_id)
        return pruned
