"""Where session roots go: somewhere the runner user (the account session commands run as)
can enter, even when the data directory is private to the runner."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from workers.errors import WorkerError
from workers.session.runner.command import Account, account_of
from workers.settings import Settings

__all__ = [
    "WorkspacesUnavailable",
    "can_enter",
    "open_workspaces",
    "runner_readable_dir",
    "scratch_parent",
    "workspaces_root",
]

#: where a runner keeps session roots when its user cannot enter the data directory and
#: HOOKSPAWN_WORKSPACES_DIR is unset (a directory the runner owns, named for the data dir)
_PRIVATE_PARENTS = (Path("/var/tmp"), Path("/tmp"))  # noqa: S108 (made owned, never followed)
#: the mode of that directory: the runner user passes through, and lists nothing
_ROOT_MODE = 0o711


class WorkspacesUnavailable(WorkerError):
    """The runner cannot give its user a place for session roots: it does not start."""

    code = "workspaces_unavailable"


def can_enter(path: Path, account: Account) -> bool:
    """Whether `account` (its own group only, as session commands get no other) may pass
    through every directory from / down to `path` (those of them that exist), by their mode
    bits."""
    current = Path("/")
    for part in Path(os.path.abspath(path)).parts[1:]:
        current = current / part
        try:
            info = os.stat(current)
        except FileNotFoundError:
            return True  # the rest is made by the runner, its user's way
        if not stat.S_ISDIR(info.st_mode):
            return False
        if info.st_uid == account.uid:
            bit = stat.S_IXUSR
        elif info.st_gid == account.gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return False
    return True


def _private_default(data_dir: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(os.path.abspath(data_dir))).hexdigest()[:16]
    parent = next((p for p in _PRIVATE_PARENTS if p.is_dir()), Path(tempfile.gettempdir()))
    return parent / f"hookspawn-workspaces-{digest}"


def _account(settings: Settings) -> Account | None:
    """The runner user; None when there is none, or no such user (the runner refuses to
    start then, naming it: the web's answer does not matter)."""
    try:
        return account_of(settings.runner_user)
    except KeyError:
        return None


def workspaces_root(settings: Settings) -> Path:
    """The directory session roots are made in: HOOKSPAWN_WORKSPACES_DIR when set, else
    `<data dir>/workspaces` when the runner user can enter the data directory (or there is
    none: the runner is not root), else a directory of the runner's own, named for the data
    directory, under /var/tmp. The same answer in every process of one deployment."""
    if settings.workspaces_dir is not None:
        return Path(os.path.abspath(settings.workspaces_dir))
    account = _account(settings)
    if account is None or can_enter(settings.data_dir, account):
        return Path(os.path.abspath(settings.data_dir / "workspaces"))
    return _private_default(settings.data_dir)


def runner_readable_dir(settings: Settings) -> Path:
    """A directory of the runner's the runner user can read: the data directory when that
    user can enter it, else the workspaces root (for what session commands read beside their
    session root, such as the demo's repository)."""
    account = _account(settings)
    if account is None or can_enter(settings.data_dir, account):
        return Path(os.path.abspath(settings.data_dir))
    return workspaces_root(settings)


def scratch_parent(account: Account | None, workspaces: Path) -> Path | None:
    """Where srt's scratch directories go: the system's temporary directory (None) when the
    runner user can enter it, else the workspaces root."""
    if account is None or can_enter(Path(tempfile.gettempdir()), account):
        return None
    return workspaces


def open_workspaces(settings: Settings) -> Path:
    """The workspaces root, made and checked at the runner's start. Raises
    WorkspacesUnavailable naming the path, the account and the setting when the runner user
    could not use it, or when a directory the runner would make for itself is someone else's."""
    root = workspaces_root(settings)
    account = account_of(settings.runner_user)
    default = Path(os.path.abspath(settings.data_dir / "workspaces"))
    if account is None or (settings.workspaces_dir is None and root == default):
        return root
    if settings.workspaces_dir is None:
        _make_own(root, account)
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkspacesUnavailable(
            f"HOOKSPAWN_WORKSPACES_DIR {root}: cannot make it: {exc.strerror or exc}"
        ) from None
    if not can_enter(root, account):
        raise WorkspacesUnavailable(
            f"HOOKSPAWN_WORKSPACES_DIR {root}: the runner user {account.name!r} "
            "(HOOKSPAWN_RUNNER_USER) cannot enter it: make it and every directory above it "
            "traversable by that account, or name another"
        )
    return root


def _make_own(root: Path, account: Account) -> None:
    """Make `root` (mode 0711) in a directory every account may write in, or use the one an
    earlier start made: never one someone else made or a link."""
    try:
        os.mkdir(root, _ROOT_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        why = f"cannot make it: {exc.strerror}"
        raise WorkspacesUnavailable(_refusal(root, account, why)) from None
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise WorkspacesUnavailable(
            _refusal(root, account, "it exists and is not a directory the runner owns")
        )
    os.chmod(root, _ROOT_MODE)
    if not can_enter(root, account):
        raise WorkspacesUnavailable(_refusal(root, account, f"{account.name!r} cannot enter it"))


def _refusal(root: Path, account: Account, why: str) -> str:
    return (
        f"the runner user {account.name!r} (HOOKSPAWN_RUNNER_USER) cannot enter the data "
        f"directory, so session roots would go to {root}, but {why}: set "
        "HOOKSPAWN_WORKSPACES_DIR to a directory that account can enter"
    )
