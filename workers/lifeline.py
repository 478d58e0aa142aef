"""Child processes that cannot outlive their parent: Linux's prctl(PR_SET_PDEATHSIG)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

#: from <linux/prctl.h>
PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def die_with_parent(sig: int, parent: int) -> None:
    """Have the kernel send `sig` to this process when its parent dies, SIGKILL included.

    `parent` is the pid that forked us: if it died before the prctl took hold, we were
    already handed to another parent and no signal would ever come, so we take it now.
    """
    if _libc is None:
        return
    if _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def tied_to_this_process(
    sig: int = signal.SIGKILL, *, then: Callable[[], None] | None = None
) -> Callable[[], None]:
    """A `preexec_fn` for `subprocess.Popen`: the child gets `sig` when the calling process
    dies. (The kernel watches the thread that forks the child: call Popen from a thread that
    lives as long as the child should, as the main thread does.) `then`: run after that."""
    parent = os.getpid()

    def preexec() -> None:
        die_with_parent(sig, parent)
        if then is not None:
            then()

    return preexec
