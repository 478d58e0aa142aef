"""Copying a directory tree into or out of the setup snapshot cache as it lies on disk: a
sparse file keeps its holes, a file linked several times stays one file with as many links,
and the copy stops before what it holds would pass a budget. Only directories, regular files
and symbolic links are copied (a FIFO would block the copy); nothing is read through a link."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Collection
from pathlib import Path

from workers.errors import WorkerError
from workers.session.runner.command import Account
from workers.session.runner.disk_usage import footprint, format_size

__all__ = ["CopyBudgetExceeded", "TreeCopy"]

#: the mode bits a copy keeps: never set-user-ID nor set-group-ID (copies are made as root)
_MODE = 0o1777
_CHUNK = 1 << 20
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: O_NONBLOCK: a FIFO swapped in for a file after it was listed never blocks the open
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: copy_file_range refusing these pairs of files: the data is read and written instead
_NO_RANGE_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM}


class CopyBudgetExceeded(WorkerError):
    """A copy stopped before `source` would take it past `budget` bytes; `copied`: what it
    had written by then (0: nothing)."""

    code = "copy_budget_exceeded"

    def __init__(self, source: Path, budget: int, copied: int) -> None:
        super().__init__(
            f"copying {source} would take more than {format_size(budget)}",
            budget=budget,
            copied=copied,
        )
        self.source, self.budget, self.copied = source, budget, copied


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    """Bytes `start` to `end` of `src` into the same place of `dst` (fewer when `src` has
    shrunk meanwhile)."""
    offset = start
    ranged = True
    while offset < end:
        count = min(_CHUNK, end - offset)
        if ranged:
            try:
                done = os.copy_file_range(src, dst, count, offset, offset)
            except OSError as exc:
                if exc.errno not in _NO_RANGE_COPY:
                    raise
                ranged = False
                continue
        else:
            data = os.pread(src, count, offset)
            done = os.pwrite(dst, data, offset) if data else 0
        if done == 0:
            return
        offset += done


def _copy_data(src: int, dst: int, size: int) -> None:
    """The first `size` bytes of `src` into `dst`, its holes left holes (SEEK_DATA/SEEK_HOLE;
    where those are not supported, all of it). The caller sets the length."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(src, offset, os.SEEK_DATA)
            end = min(os.lseek(src, start, os.SEEK_HOLE), size)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nothing but a hole left
                return
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
            start, end = offset, size
        if start >= size:
            return
        _copy_range(src, dst, start, end)
        offset = end


class TreeCopy:
    """One copy (a save or a restore): at most `budget` bytes (None: no bound), each new
    directory, file and link counted by its source's `footprint` (a sparse file at its
    length) and each file linked several times once, as its later links are made links again.
    `owner`: whom the copies belong to (None: this process); `skip`: source paths left out."""

    def __init__(
        self,
        budget: int | None,
        *,
        owner: Account | None = None,
        skip: Collection[Path] = (),
    ) -> None:
        self.budget, self.owner, self.skip = budget, owner, set(skip)
        #: the bytes counted so far
        self.used = 0
        self._linked: dict[tuple[int, int], Path] = {}

    def copy(self, source: Path, target: Path) -> None:
        """Copy `source` (a directory, regular file or link, never followed) to `target`,
        which must not exist; anything else is left out. Raises CopyBudgetExceeded before the
        entry that would pass the budget (what was copied before it stays)."""
        self._entry(None, source, os.lstat(source), target)

    def _charge(self, source: Path, size: int) -> None:
        if self.budget is not None and self.used + size > self.budget:
            raise CopyBudgetExceeded(source, self.budget, self.used)
        self.used += size

    def _entry(self, at: int | None, source: Path, info: os.stat_result, target: Path) -> None:
        if source in self.skip:
            return
        name = source.name if at is not None else os.fspath(source)
        if stat.S_ISDIR(info.st_mode):
            self._directory(at, name, source, info, target)
        elif stat.S_ISREG(info.st_mode):
            self._file(at, name, source, info, target)
        elif stat.S_ISLNK(info.st_mode):
            self._link(at, name, source, info, target)

    def _own(self, made: int | Path) -> None:
        """Give what was made (an open file, or a path never followed) to `owner`."""
        if self.owner is None:
            return
        if isinstance(made, int):
            os.fchown(made, self.owner.uid, self.owner.gid)
        else:
            os.chown(made, self.owner.uid, self.owner.gid, follow_symlinks=False)

    def _directory(
        self, at: int | None, name: str, source: Path, info: os.stat_result, target: Path
    ) -> None:
        fd = os.open(name, _DIRECTORY, dir_fd=at)
        try:
            self._charge(source, footprint(info))
            os.mkdir(target, 0o700)
            self._own(target)
            with os.scandir(fd) as listing:
                names = sorted(entry.name for entry in listing)
            for child in names:
                try:
                    child_info = os.stat(child, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                self._entry(fd, source / child, child_info, target / child)
            # the mode last: a read-only directory is filled first
            os.chmod(target, stat.S_IMODE(info.st_mode) & _MODE)
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(fd)

    def _file(
        self, at: int | None, name: str, source: Path, info: os.stat_result, target: Path
    ) -> None:
        earlier = self._linked.get((info.st_dev, info.st_ino)) if info.st_nlink > 1 else None
        if earlier is not None:
            os.link(earlier, target, follow_symlinks=False)
            return
        src = os.open(name, _FILE, dir_fd=at)
        try:
            now = os.fstat(src)
            if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
                info.st_dev,
                info.st_ino,
            ):
                return  # replaced since it was listed: left out
            self._charge(source, footprint(now))
            dst = os.open(target, _NEW, 0o600)
            try:
                _copy_data(src, dst, now.st_size)
                os.ftruncate(dst, now.st_size)
                self._own(dst)
                os.fchmod(dst, stat.S_IMODE(now.st_mode) & _MODE)
                os.utime(dst, ns=(now.st_atime_ns, now.st_mtime_ns))
            finally:
                os.close(dst)
        finally:
            os.close(src)
        if now.st_nlink > 1:
            self._linked[(now.st_dev, now.st_ino)] = target

    def _link(
        self, at: int | None, name: str, source: Path, info: os.stat_result, target: Path
    ) -> None:
        value = os.readlink(name, dir_fd=at)
        self._charge(source, footprint(info))
        os.symlink(value, target)
        self._own(target)
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
