"""The setup snapshot cache on disk: `cache.paths` saved per key after setup, restored before it."""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from workers.session_exec import Account
from workers.staging import host_path, inside, make_dirs

__all__ = ["SnapshotCache"]

_META = "snapshot.json"


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

    def save(self, key: str, workspace: Path, paths: Iterable[str]) -> list[str]:
        """Save the paths that exist in the workspace under `key` (replacing an older save);
        the paths saved."""
        staging = self.root / f".{key}.{uuid.uuid4().hex}"
        saved = []
        for path in paths:
            source = host_path(workspace, path)
            if not inside(workspace, source) or not source.is_dir():
                continue
            shutil.copytree(source, staging / "files" / path.lstrip("/"), symlinks=True)
            saved.append(path)
        staging.mkdir(parents=True, exist_ok=True)
        (staging / _META).write_text(json.dumps({"savedAt": time.time(), "paths": saved}))
        final = self.root / key
        old = self.root / f".{key}.old.{uuid.uuid4().hex}"
        if final.exists():
            final.rename(old)
        staging.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        return saved
