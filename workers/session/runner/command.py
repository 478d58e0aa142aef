"""Every command a session runs (git staging, setup, harness) goes through `run_command`."""

from __future__ import annotations

import contextlib
import os
import pwd
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from workers.errors import WorkerError
from workers.lifeline import tied_to_this_process

__all__ = [
    "Account",
    "CommandCancelled",
    "CommandOutput",
    "CommandTimedOut",
    "account_of",
    "run_command",
    "runner_account",
]

#: how often a running command is checked for its deadline and for a cancel request
_POLL = 0.1
#: how long the end of a command's output is waited for once its process group is gone (a
#: process that left the group may still hold the pipe: what it writes later is not read)
_OUTPUT_GRACE = 2.0


class CommandOutput(Protocol):
    """Where a command's output goes (a session's log): `write` gets each chunk read from
    the command's pipe, `flush` is called once that output has ended."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> None: ...


class CommandTimedOut(WorkerError):
    """The command ran past its timeout; its process group was killed."""

    code = "command_timed_out"


class CommandCancelled(WorkerError):
    """The session was cancelled while the command ran; its process group was killed."""

    code = "command_cancelled"


@dataclass(frozen=True)
class Account:
    """The unprivileged account session commands run as (when the runner is root)."""

    name: str
    uid: int
    gid: int


def runner_account(account: Account | None) -> str:
    """Who runs session commands, as a message names them."""
    return f"the runner user {account.name!r}" if account else "the runner"


def account_of(name: str) -> Account | None:
    """The account to switch to: None when not running as root or no user is configured.
    Raises KeyError (naming the user) when the configured user does not exist."""
    if os.geteuid() != 0 or not name:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise KeyError(f"HOOKSPAWN_RUNNER_USER: no user {name!r} on this machine") from None
    return Account(name=name, uid=entry.pw_uid, gid=entry.pw_gid)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float | None,
    log: CommandOutput,
    cancel: Callable[[], bool],
    account: Account | None = None,
    stdin: bytes | None = None,
    parent_death: int = signal.SIGKILL,
    preexec: Callable[[], None] | None = None,
    stdout: CommandOutput | None = None,
    enter: Callable[[], None] | None = None,
) -> int:
    """Run `argv` (never through a shell unless argv is one) in a process group of its own,
    its output (standard output and error) read from a pipe and handed to `log`, never a file
    the command could truncate or seek in; its exit status. A timeout or a cancel request kills the
    whole group and raises; whatever the command left running in its group is killed too.

    The one place session commands start (a sandbox has wrapped `argv` just before).
    `parent_death`: the signal the command gets when the runner dies; a confined command
    gets SIGTERM, which srt passes on to what it runs (SIGKILL would leave that running).
    `preexec`: run in the child before it execs, after it switched to `account` (the session's
    cgroup is entered there, so nothing the command starts is outside it).
    `stdout`: where standard output goes instead (read from a pipe of its own; standard error
    still goes to `log`), for a harness whose output is its events.
    `enter`: run in the child first, as the runner (root), before it switches to `account`:
    how a confined command enters its session's own mount namespace (`SandboxPaths.enter`).
    """
    reading, writing = os.pipe()
    out_reading, out_writing = os.pipe() if stdout is not None else (None, None)
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=writing if out_writing is None else out_writing,
            stderr=subprocess.STDOUT if out_writing is None else writing,
            process_group=0,
            # with `enter`, the child switches to the account itself, after it
            user=account.uid if account and enter is None else None,
            group=account.gid if account and enter is None else None,
            extra_groups=[] if account and enter is None else None,
            preexec_fn=_child(enter, account, tied_to_this_process(parent_death, then=preexec)),
        )
    except BaseException:
        os.close(reading)
        if out_reading is not None:
            os.close(out_reading)
        raise
    finally:
        os.close(writing)
        if out_writing is not None:
            os.close(out_writing)
    output_ended = threading.Event()
    reader = threading.Thread(
        target=_read_output, args=(reading, log, output_ended), daemon=True, name="command-output"
    )
    reader.start()
    out_reader = None
    if out_reading is not None and stdout is not None:
        out_reader = threading.Thread(
            target=_read_output,
            args=(out_reading, stdout, output_ended),
            daemon=True,
            name="command-stdout",
        )
        out_reader.start()
    feeder = None
    if stdin is not None:
        feeder = threading.Thread(target=_feed, args=(process, stdin), daemon=True)
        feeder.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    # a blocking wait in a thread: the end is seen at once (Popen.wait with a timeout polls,
    # up to 50 ms late each time, and staging runs a dozen short git commands)
    ended = threading.Event()
    waiter = threading.Thread(target=_wait, args=(process, ended), daemon=True)
    waiter.start()
    try:
        while not ended.wait(_POLL):
            if cancel():
                _kill_group(process.pid)
                process.wait()
                raise CommandCancelled(" ".join(argv[:2]))
            if deadline is not None and time.monotonic() > deadline:
                _kill_group(process.pid)
                process.wait()
                raise CommandTimedOut(" ".join(argv[:2]))
    finally:
        _kill_group(process.pid)
        if feeder is not None:
            feeder.join(1)
        reader.join(_OUTPUT_GRACE)
        if out_reader is not None:
            out_reader.join(_OUTPUT_GRACE)
        output_ended.set()
        reader.join()
        os.close(reading)
        if out_reader is not None and out_reading is not None and stdout is not None:
            out_reader.join()
            os.close(out_reading)
            stdout.flush()
        log.flush()
    return process.wait()


def _child(
    enter: Callable[[], None] | None, account: Account | None, then: Callable[[], None]
) -> Callable[[], None]:
    """The child's work before it execs: `enter` as root, then `account`'s identity (no
    supplementary group), then `then` (which asks for the parent's death signal: a change of
    identity would clear it)."""
    if enter is None:
        return then

    def child() -> None:
        enter()
        if account is not None:
            os.setgroups([])
            os.setgid(account.gid)
            os.setuid(account.uid)
        then()

    return child


def _read_output(fd: int, log: CommandOutput, ended: threading.Event) -> None:
    """Hand what the command writes to `log` until every writer has closed the pipe, or
    until `ended` is set (the command is gone, something it left behind still holds it)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not ended.is_set():
        if not poller.poll(_POLL * 1000):
            continue
        data = os.read(fd, 65536)
        if not data:
            return
        # a log that cannot be written (a full disk) loses the output, never blocks the command
        with contextlib.suppress(OSError):
            log.write(data)


def _wait(process: subprocess.Popen[bytes], ended: threading.Event) -> None:
    process.wait()
    ended.set()


def _feed(process: subprocess.Popen[bytes], data: bytes) -> None:
    """Write the command's standard input, then close it (a command may not read it all)."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.write(data)
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.close()
