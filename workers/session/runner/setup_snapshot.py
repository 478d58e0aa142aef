"""One session's setup snapshot: its scope and key, restored before setup and saved after, the
outcome recorded on the session's run."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from agents.environment_spec import EnvironmentSpec
from triggers.session.snapshot import files_digest, snapshot_key
from triggers.session.snapshot_scope import Candidate, ScopePlan, may_restore, plan_scopes
from triggers.session.spec import SessionSpec
from workers.errors import SessionFailed
from workers.session.runner.command import Account
from workers.session.runner.disk_usage import format_size
from workers.session.runner.snapshots import SnapshotCache, slot_of
from workers.session.runner.staging import host_path, inside
from workers.session.runner.tree_copy import CopyBudgetExceeded
from workers.session.runs import SessionRuns

__all__ = ["SetupSnapshot"]


def _file_hash(workspace: Path, path: Path) -> str | None:
    """The sha256 of a regular file in the session root (never through a link out of it)."""
    if not inside(workspace, path) or not path.is_file():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class SetupSnapshot:
    """Restore (before setup) and save (after it, on a miss) the session's home."""

    def __init__(
        self,
        cache: SnapshotCache,
        runs: SessionRuns,
        owner: str,
        session: SessionSpec,
        environment: EnvironmentSpec,
        *,
        workspace: Path,
        home: Path,
        cwd: Path,
        account: Account | None,
        note: Callable[[str], None],
    ) -> None:
        self.cache, self.runs, self.owner, self.session = cache, runs, owner, session
        self.environment = environment
        self.workspace, self.home, self.account, self.note = workspace, home, account, note
        mounts = session.mounts
        self.mounts = mounts
        self.ttl = environment.snapshot_ttl.total_seconds()
        #: the checkouts, staged afresh each session: never saved nor restored over
        self.skip = {host_path(workspace, m.mount_path) for m in mounts}
        env = [environment.env, session.env]
        self.plan: ScopePlan = plan_scopes(mounts, env, session.input)
        hashes = {name: _file_hash(workspace, cwd / name) for name in environment.cache_files}
        self.files = files_digest(hashes)
        self.key = self._key(tuple(m.ref for m in mounts))
        self.restored: Candidate | None = None

    def _key(self, refs: tuple[str | None, ...]) -> str:
        # the key is a digest of the mounts' JSON, as the spec holds them
        mounts = [{**m.to_json(), "ref": r} for m, r in zip(self.mounts, refs, strict=True)]
        return snapshot_key(self.environment, mounts, self.session.working_directory, self.files)

    def _record(self, **fields: str) -> None:
        self.runs.note_snapshot(self.session.id, self.owner, **fields)

    def restore(self) -> None:
        """Restore the first snapshot the session may take, in the scopes it may read."""
        plan = self.plan
        if plan.privileged and plan.pull_request_code:
            self.note(
                "snapshot: this session runs pull-request code and is privileged "
                f"({'; '.join(plan.privileged)}): it restores no snapshot of its pull request"
            )
        for candidate in plan.restore:
            key = self._key(candidate.refs)
            slot = slot_of(candidate.scope, key)
            record = self.cache.record(slot, ttl=self.ttl)
            if record is None:
                continue
            if not may_restore(plan, candidate, record):
                self.note(f"snapshot {key} in {candidate.scope}: not for this session, left")
                continue
            try:
                restored = self.cache.restore(
                    slot, self.home, self.workspace, account=self.account, skip=self.skip
                )
            except CopyBudgetExceeded as exc:
                limit = f"HOOKSPAWN_SESSION_DISK_LIMIT ({format_size(exc.budget)})"
                if exc.copied:  # part of it is in the home already
                    raise SessionFailed(
                        f"restoring snapshot {key} from {candidate.scope} would take the home "
                        f"past {limit}",
                        code="disk_limit_exceeded",
                    ) from None
                self.note(
                    f"snapshot {key} in {candidate.scope}: not restored, it holds more than {limit}"
                )
                continue
            if restored:
                self.restored = candidate
                self.note(f"snapshot {key}: restored from {candidate.scope}")
                self._record(
                    snapshotKey=self.key, snapshotScope=candidate.scope, snapshot="restored"
                )
                return
        looked = ", ".join(c.scope for c in plan.restore) or "none it may read"
        self.note(f"snapshot {self.key}: miss (looked in {looked})")
        self._record(snapshotKey=self.key, snapshotScope=plan.save, snapshot="missed")

    def save(self) -> None:
        """Save the home setup left into the session's own scope, on a miss only: a hit
        re-saving would keep a snapshot fresh forever, and setupCache.ttl bounds how stale
        its results may get."""
        if self.restored is not None:
            return
        record = {
            "scope": self.plan.save,
            "key": self.key,
            "pullRequestCode": self.plan.pull_request_code,
            "secrets": list(self.plan.secrets),
            "sessionId": self.session.id,
        }
        slot = slot_of(self.plan.save, self.key)
        try:
            saved = self.cache.save(
                slot, self.home, self.workspace, ttl=self.ttl, record=record, skip=self.skip
            )
        except CopyBudgetExceeded as exc:
            why = f"the home holds more than HOOKSPAWN_SNAPSHOT_LIMIT ({format_size(exc.budget)})"
            self.note(f"snapshot {self.key}: not saved: {why}")
            self._record(snapshotScope=self.plan.save, snapshot=f"not saved: {why}")
            return
        if saved:
            self.note(f"snapshot {self.key}: saved into {self.plan.save}")
            self._record(snapshotScope=self.plan.save, snapshot="saved")
        else:
            self.note(f"snapshot {self.key}: not saved (the home is not a directory of its own)")
