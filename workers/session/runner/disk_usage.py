"""How much disk a session root holds, and a watch that notices it passing a limit."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

__all__ = ["DiskWatch", "disk_usage", "footprint", "format_size"]

#: the least time between two walks of a session root, in seconds
POLL = 1.0
#: a walk waits this many times as long as the last one took before the next, so a large
#: session root costs at most about a tenth of one core
_SPACING = 10.0


def format_size(size: int) -> str:
    """`10 GiB`, `512 MiB`, `2.5 MiB`, `640 bytes`."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def footprint(info: os.stat_result) -> int:
    """What one file counts for: its length (a sparse file at its full length, as a copy that
    fills its holes would take), or the blocks allocated to it when those are more (space
    reserved past its end, a directory)."""
    return max(info.st_size, info.st_blocks * 512)


def disk_usage(root: Path) -> int:
    """The bytes everything under `root` counts for (`footprint`: a sparse file at its
    length), `root` included: symbolic links are not followed, no other file system is
    entered, a file linked several times counts once. What vanishes or cannot be read during
    the walk is left out."""
    try:
        top = os.lstat(root)
    except OSError:
        return 0
    if not stat.S_ISDIR(top.st_mode):
        return footprint(top)
    total = footprint(top)
    linked: set[int] = set()
    pending = [os.fspath(root)]
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != top.st_dev:
                    continue
                if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                    if info.st_ino in linked:
                        continue
                    linked.add(info.st_ino)
                total += footprint(info)
                if stat.S_ISDIR(info.st_mode):
                    pending.append(entry.path)
    return total


class DiskWatch:
    """Walks `root` from `start` to `stop`, at most once per `poll` seconds (spaced further
    when a walk takes long); `exceeded` holds the bytes seen once they passed `limit`."""

    def __init__(self, root: Path, limit: int, *, poll: float = POLL) -> None:
        self.root, self.limit, self.poll = root, limit, poll
        self.exceeded: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> int | None:
        """Walk the root now; the bytes it holds when past the limit (kept in `exceeded`)."""
        used = disk_usage(self.root)
        if used > self.limit and self.exceeded is None:
            self.exceeded = used
        return self.exceeded

    def _loop(self) -> None:
        wait = self.poll
        while not self._stop.wait(wait):
            started = time.monotonic()
            if self.check() is not None:
                return
            wait = max(self.poll, (time.monotonic() - started) * _SPACING)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True, name="disk-watch")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
