"""The setup snapshot cache on disk: `cache.paths` saved per key after setup, restored before it,
removed once past its reuse window."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from agents.snapshot import DEFAULT_TTL_SECONDS
from workers.session_exec import Account
from workers.staging import host_path, inside, make_dirs
from workers.tree_removal import remove_tree

__all__ = ["SnapshotCache"]

log = logging.getLogger(__name__)

_META = "snapshot.json"
#: a snapshot key (agents.snapshot.snapshot_key), and so the only name a saved snapshot has
_KEY = re.compile(r"[0-9a-f]{32}")
#: a save in progress, or what an interrupted save or replacement left (`.<key>.<suffix>`)
_TRANSIENT = re.compile(r"\.[0-9a-f]{32}\..+")
#: how long a transient directory is left alone: far longer than one save takes
TRANSIENT_GRACE = 3600.0


def _chown_tree(root: Path, account: Account) -> None:
    os.chown(root, account.uid, account.gid, follow_symlinks=False)
    for parent, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.chown(Path(parent) / name, account.uid, account.gid, follow_symlinks=False)


class SnapshotCache:
    """`<root>/<key>/` holds `snapshot.json` (saved time, paths) and `files/<path>` per
    cached path (its sandbox path without the leading `/`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def restore(
        self, key: str, workspace: Path, *, ttl: float, account: Account | None
    ) -> list[str] | None:
        """Copy a fresh snapshot's paths into the workspace; the paths, or None on a miss
        (none saved, or saved longer than `ttl` seconds ago)."""
        meta_file = self.root / key / _META
        try:
            meta = json.loads(meta_file.read_text())
        except (OSError, ValueError):
            return None
        if time.time() - float(meta.get("savedAt", 0)) > ttl:
            return None
        restored = []
        for path in meta.get("paths", []):
            source = self.root / key / "files" / path.lstrip("/")
            if not source.exists():
                continue
            target = host_path(workspace, path)
            if not inside(workspace, target.parent):
                continue  # a link out of the session root: never write through it as root
            if target.is_symlink():
                target.unlink()
            elif target.exists():
                shutil.rmtree(target)
            make_dirs(workspace, target.parent, account)
            shutil.copytree(source, target, symlinks=True)
            if account:
                _chown_tree(target, account)
            restored.append(path)
        return restored

    def save(self, key: str, workspace: Path, paths: Iterable[str], *, ttl: float) -> list[str]:
        """Save the paths that exist in the workspace under `key` (replacing an older save),
        to be pruned `ttl` seconds on; the paths saved."""
        staging = self.root / f".{key}.{uuid.uuid4().hex}"
        saved = []
        for path in paths:
            source = host_path(workspace, path)
            if not inside(workspace, source) or not source.is_dir():
                continue
            shutil.copytree(source, staging / "files" / path.lstrip("/"), symlinks=True)
            saved.append(path)
        staging.mkdir(parents=True, exist_ok=True)
        now = time.time()
        meta = {"savedAt": now, "expiresAt": now + ttl, "paths": saved}
        (staging / _META).write_text(json.dumps(meta))
        final = self.root / key
        old = self.root / f".{key}.old.{uuid.uuid4().hex}"
        if final.exists():
            final.rename(old)
        staging.rename(final)
        if old.exists():
            try:
                remove_tree(old)
            except OSError as exc:  # the saved snapshot stands; the sweep retries this one
                log.warning("could not remove the replaced setup snapshot %s: %s", old, exc)
        return saved

    def _expired(self, entry: Path, now: float) -> bool:
        if _TRANSIENT.fullmatch(entry.name):
            return now - entry.lstat().st_mtime > TRANSIENT_GRACE
        if not _KEY.fullmatch(entry.name):
            return False
        try:
            meta = json.loads((entry / _META).read_text())
            # a save that recorded no expiry is kept for the default reuse window
            expires = meta.get("expiresAt", float(meta["savedAt"]) + DEFAULT_TTL_SECONDS)
            return float(expires) < now
        except (OSError, ValueError, KeyError, TypeError):
            # no readable record: restore treats it as a miss; gone once it is surely not
            # a save that is being written
            return now - entry.lstat().st_mtime > TRANSIENT_GRACE

    def prune(self, now: float | None = None) -> list[str]:
        """Remove the snapshots past their reuse window, and what interrupted saves left;
        the names removed. Only names a save makes are considered, never through a link."""
        now = time.time() if now is None else now
        try:
            entries = sorted(self.root.iterdir())
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("cannot list %s to remove expired setup snapshots: %s", self.root, exc)
            return []
        removed = []
        for entry in entries:
            try:
                if entry.is_symlink() or not entry.is_dir() or not self._expired(entry, now):
                    continue
                # renamed first, so no restore starts on a half-removed snapshot
                doomed = self.root / f".{entry.name.lstrip('.')}.pruned.{uuid.uuid4().hex}"
                entry.rename(doomed)
                remove_tree(doomed)
            except OSError as exc:
                log.warning("could not remove the setup snapshot %s: %s", entry, exc)
                continue
            removed.append(entry.name)
        return removed
