"""`hookspawn web --workers N`: N processes serving one port, under a supervising parent.

uvicorn's own `workers=` starts its children with `spawn` from an import string, and pickles
its configuration: the app's protocol class (made per limits by `hookspawn.web.server.limits`) and a
built Runtime survive neither. So the parent here opens N listening sockets on the port, each
with SO_REUSEPORT (the kernel spreads new connections over them by their addresses: one
process cannot take every connection of a burst, as it could accepting from one shared socket),
and N more on the broker's port (hookspawn/web/server/listeners.py), then forks one child per pair.
Each child builds its own Runtime and app, so every Redis connection is opened after the fork
and none is inherited, and runs uvicorn on its pair of sockets. The parent holds the sockets,
so the connections queued on the sockets of a child that died wait for its replacement
rather than being refused.

The parent opens no connection and serves nothing: it forwards SIGTERM, SIGINT and SIGHUP to
its children as SIGTERM (uvicorn's graceful stop; a second signal is forwarded as SIGINT,
uvicorn's immediate one), waits for them all and exits 0; it replaces a child that exits
while it is not stopping, logging its pid and how it ended, later each time one dies soon
after its start. A child whose parent is gone (killed) stops by itself.

The parent also makes the key the children seal the session tokens with
(workers.session.sealed_tokens), held in memory only and inherited across the fork.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn

from hookspawn.errors import CommandError
from hookspawn.web.server.http_server import BACKLOG, broker_line, settle_heap, web_config
from workers.session.sealed_tokens import new_key
from workers.settings import Settings

__all__ = ["Supervisor", "listeners", "serve_processes"]

log = logging.getLogger("hookspawn.web")

#: a child that exits sooner than this after its start is replaced only after a pause, which
#: doubles with each such exit in a row (up to MAX_PAUSE): a child that cannot start (Redis
#: refusing, say) is not forked in a tight loop
QUICK_EXIT = 10.0
FIRST_PAUSE = 0.5
MAX_PAUSE = 30.0
#: the signals that stop the parent (and, forwarded, its children)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: what a child runs on its sockets (the admin API's, the broker's); answers its exit status
ChildMain = Callable[[list[socket.socket]], int]


def listeners(host: str, port: int, count: int) -> list[socket.socket]:
    """`count` listening sockets bound to host:port with SO_REUSEPORT (port 0: one free port)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = found[0]
    made: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, kind, proto)
            made.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address)
            sock.listen(BACKLOG)
            address = sock.getsockname()  # with port 0, the others take the port it got
    except OSError as exc:
        for sock in made:
            sock.close()
        raise CommandError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}", exit_code=2
        ) from None
    return made


@dataclass
class _Child:
    pid: int
    started: float


class Supervisor:
    """Forks one child per slot (its sockets), keeps one running per slot, stops them all on
    a signal."""

    def __init__(self, sockets: list[list[socket.socket]], main: ChildMain) -> None:
        self.sockets = sockets
        self.main = main
        self.children: dict[int, _Child] = {}  # by slot (the index of its socket)
        self.quick_exits = [0] * len(sockets)
        self.due: dict[int, float] = {}  # slot → when its replacement starts
        self.stops = 0
        self._mask: set[int | signal.Signals] = set()

    def run(self) -> int:
        """Until a stop signal and every child's exit; answers 0."""
        waited = {signal.SIGCHLD, *STOP_SIGNALS}
        # blocked, and taken with sigtimedwait: no handler runs in the middle of a fork
        self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
        try:
            for slot in range(len(self.sockets)):
                self._start(slot)
            while self.children or (self.due and not self.stops):
                self._reap()
                if self.stops:
                    self.due.clear()
                now = time.monotonic()
                for slot, when in sorted(self.due.items()):
                    if when <= now:
                        del self.due[slot]
                        self._start(slot)
                if not self.children and not self.due:
                    break
                wait = min([1.0, *(when - now for when in self.due.values())])
                got = signal.sigtimedwait(waited, max(wait, 0.01))
                if got is not None and got.si_signo != signal.SIGCHLD:
                    self._stop(signal.Signals(got.si_signo))
        finally:
            # a signal that came after the last child exited is taken here, not left pending
            # to raise KeyboardInterrupt once unblocked
            while signal.sigpending() & waited:
                signal.sigtimedwait(waited, 0)
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
        return 0

    def _start(self, slot: int) -> None:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            self._child(slot)
        self.children[slot] = _Child(pid, time.monotonic())
        log.info("web process %d started (%d of %d)", pid, slot + 1, len(self.sockets))

    def _child(self, slot: int) -> None:
        status = 1
        try:
            signal.signal(signal.SIGTERM, _exit_quietly)
            signal.signal(signal.SIGINT, _exit_quietly)
            # a terminal's hangup reaches the whole group: the parent's SIGTERM stops this one
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            for index, group in enumerate(self.sockets):
                if index != slot:
                    for sock in group:
                        sock.close()
            status = self.main(self.sockets[slot])
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            log.exception("web process %d failed", os.getpid())
        finally:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            slot = next((s for s, c in self.children.items() if c.pid == pid), None)
            if slot is None:
                continue
            child = self.children.pop(slot)
            if self.stops:
                continue
            lived = time.monotonic() - child.started
            self.quick_exits[slot] = self.quick_exits[slot] + 1 if lived < QUICK_EXIT else 0
            quick = self.quick_exits[slot]
            pause = min(MAX_PAUSE, FIRST_PAUSE * 2 ** (quick - 1)) if quick else 0.0
            log.warning(
                "web process %d %s; starting another%s",
                pid,
                _how_it_ended(status),
                f" in {pause:g}s (it had run {lived:.1f}s)" if pause else "",
            )
            self.due[slot] = time.monotonic() + pause

    def _stop(self, sig: signal.Signals) -> None:
        self.stops += 1
        forwarded = signal.SIGTERM if self.stops == 1 else signal.SIGINT
        if self.stops == 1:
            log.info("%s: stopping %d web process(es)", sig.name, len(self.children))
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, forwarded)


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    """A child's stop signal outside uvicorn's handling (before it serves, or re-raised by it
    after its graceful stop): exit 0."""
    raise SystemExit(0)


def _how_it_ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        return f"was killed by signal {-code} ({signal.Signals(-code).name})"
    return f"exited with status {code}"


class _ChildServer(uvicorn.Server):
    """uvicorn, stopping when the supervising parent is gone."""

    def __init__(self, config: uvicorn.Config, parent: int) -> None:
        super().__init__(config)
        self.parent = parent

    async def on_tick(self, counter: int) -> bool:
        if counter % 10 == 0 and os.getppid() != self.parent and not self.should_exit:
            log.warning("web process %d: its supervising process is gone; stopping", os.getpid())
            self.should_exit = True
        return await super().on_tick(counter)


def serve_processes(
    settings: Settings, *, host: str, port: int, broker_port: int, access_log: bool, workers: int
) -> int:
    """Serve the app from `workers` processes on host:port, and the broker alone on
    host:broker_port, until stopped; answers the exit status (CommandError when a port
    cannot be listened on)."""
    from hookspawn.web.server.listeners import listening_app
    from workers.runtime import build_runtime

    mains = listeners(host, port, workers)
    try:
        brokers = listeners(host, broker_port, workers)
    except CommandError:
        for sock in mains:
            sock.close()
        raise
    key = new_key()
    parent = os.getpid()
    bound = mains[0].getsockname()[1]

    def main(sockets: list[socket.socket]) -> int:
        rt = build_runtime(settings, token_key=key)
        try:
            app: Any = listening_app(rt, bound_host=host, main_port=bound)
            config = web_config(app, rt.settings, host=host, port=port, access_log=access_log)
            settle_heap()
            _ChildServer(config, parent).run(sockets=sockets)
        finally:
            rt.close()
        return 0

    shown = f"[{host}]" if ":" in host else host
    log.info("serving http://%s:%d from %d web processes (CTRL+C to quit)", shown, bound, workers)
    log.info("%s", broker_line(host, brokers[0].getsockname()[1]))
    try:
        return Supervisor([[m, b] for m, b in zip(mains, brokers, strict=True)], main).run()
    finally:
        for sock in [*mains, *brokers]:
            sock.close()
