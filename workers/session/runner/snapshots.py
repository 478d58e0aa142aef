"""The setup snapshot cache on disk: the session's home as setup left it, saved per scope and
key, restored before setup, removed once past its reuse window."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from agents.environment_spec import DEFAULT_TTL
from workers.session.runner.command import Account
from workers.session.runner.disk_usage import disk_usage
from workers.session.runner.staging import inside
from workers.session.runner.tree_copy import CopyBudgetExceeded, TreeCopy
from workers.session.runner.tree_removal import remove_tree

__all__ = ["SnapshotCache", "slot_of"]

log = logging.getLogger(__name__)

_META = "snapshot.json"
#: a slot (`slot_of`), and so the only name a saved snapshot has
_KEY = re.compile(r"[0-9a-f]{32}")
#: a save in progress, or what an interrupted save or replacement left (`.<slot>.<suffix>`)
_TRANSIENT = re.compile(r"\.[0-9a-f]{32}\..+")
#: how long a transient directory is left alone: far longer than one save takes
TRANSIENT_GRACE = 3600.0


def slot_of(scope: str, key: str) -> str:
    """Where the snapshot of `key` in `scope` is kept: one name per (scope, key), so no scope
    can ever name another's snapshot."""
    return hashlib.sha256(f"{scope}\0{key}".encode()).hexdigest()[:32]


class SnapshotCache:
    """`<root>/<slot>/` holds `snapshot.json` (saved time, expiry, the saver's record: scope,
    key, whether it ran pull-request code) and `home/`, the session's home as setup left it.
    Both ways a copy keeps sparse files sparse and hard links linked, and is bounded: a save
    by `save_limit` bytes, a restore by `restore_limit` (None: unbounded), counted as the
    disk limit counts them (`disk_usage`)."""

    def __init__(
        self, root: Path, *, save_limit: int | None = None, restore_limit: int | None = None
    ) -> None:
        self.root = root
        self.save_limit, self.restore_limit = save_limit, restore_limit

    def record(self, slot: str, *, ttl: float) -> dict[str, Any] | None:
        """The record of a fresh snapshot in `slot`; None when there is none, or it was saved
        longer than `ttl` seconds ago."""
        try:
            meta = json.loads((self.root / slot / _META).read_text())
            if time.time() - float(meta.get("savedAt", 0)) > ttl:
                return None
        except (OSError, ValueError, TypeError, AttributeError):
            return None
        return meta if isinstance(meta, dict) else None

    def restore(
        self,
        slot: str,
        home: Path,
        workspace: Path,
        *,
        account: Account | None,
        skip: Collection[Path],
    ) -> bool:
        """Copy the snapshot's home into the session's `home` (never into a `skip`ped path, nor
        through a link); False when it holds none. Raises CopyBudgetExceeded when the snapshot
        holds more than `restore_limit` (`copied` 0: checked before anything was written)."""
        source = self.root / slot / "home"
        if not source.is_dir() or home.is_symlink() or not inside(workspace, home):
            return False
        if self.restore_limit is not None:
            held = disk_usage(source)
            if held > self.restore_limit:
                raise CopyBudgetExceeded(source, self.restore_limit, 0)
        copier = TreeCopy(self.restore_limit, owner=account)
        self._merge(source, home, copier, set(skip))
        return True

    def _merge(self, source: Path, target: Path, copier: TreeCopy, skip: set[Path]) -> None:
        for entry in sorted(source.iterdir()):
            dest = target / entry.name
            if dest in skip:
                continue
            if dest.is_dir() and not dest.is_symlink():
                if entry.is_dir() and not entry.is_symlink():
                    self._merge(entry, dest, copier, skip)  # a directory staging made
                continue
            if dest.is_symlink() or dest.exists():
                dest.unlink()
            copier.copy(entry, dest)

    def save(
        self,
        slot: str,
        home: Path,
        workspace: Path,
        *,
        ttl: float,
        record: Mapping[str, Any],
        skip: Collection[Path],
    ) -> bool:
        """Save `home` (but the `skip`ped paths) into `slot` with `record`, replacing an older
        save, to be pruned `ttl` seconds on; False when the home is not there to save (or is
        a link out of the session root). Raises CopyBudgetExceeded, the older save kept and
        nothing of this one left, when the home holds more than `save_limit`."""
        if home.is_symlink() or not home.is_dir() or not inside(workspace, home):
            return False
        staging = self.root / f".{slot}.{uuid.uuid4().hex}"
        self.root.mkdir(parents=True, exist_ok=True)
        staging.mkdir(0o700)
        try:
            TreeCopy(self.save_limit, skip=skip).copy(home, staging / "home")
        except BaseException:
            try:
                remove_tree(staging)
            except OSError as exc:  # the sweep removes it past TRANSIENT_GRACE
                log.warning("could not remove the unfinished setup snapshot %s: %s", staging, exc)
            raise
        now = time.time()
        meta = {**record, "savedAt": now, "expiresAt": now + ttl}
        (staging / _META).write_text(json.dumps(meta))
        final = self.root / slot
        old = self.root / f".{slot}.old.{uuid.uuid4().hex}"
        if final.exists():
            final.rename(old)
        staging.rename(final)
        if old.exists():
            try:
                remove_tree(old)
            except OSError as exc:  # the saved snapshot stands; the sweep retries this one
                log.warning("could not remove the replaced setup snapshot %s: %s", old, exc)
        return True

    def _expired(self, entry: Path, now: float) -> bool:
        if _TRANSIENT.fullmatch(entry.name):
            return now - entry.lstat().st_mtime > TRANSIENT_GRACE
        if not _KEY.fullmatch(entry.name):
            return False
        try:
            meta = json.loads((entry / _META).read_text())
            # a save that recorded no expiry is kept for the default reuse window
            expires = meta.get("expiresAt", float(meta["savedAt"]) + DEFAULT_TTL.total_seconds())
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
