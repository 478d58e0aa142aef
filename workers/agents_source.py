"""The compiled agent set a process works with, reloaded when the files change.

A file that cannot be read or compiled is reported and left out; the files that compile are
loaded. The set is a function of the files alone, never of what a process loaded before, so
every process (web, each worker pool process) works with the same set once it has looked,
and its `generation` (a hash of the compiled set) says which one decided a delivery.
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import logging
import os
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import RawValue
from pathlib import Path

import orjson

from agents import CompiledAgent, CompileResult, compile_dir
from triggers.matching import TriggerIndex

log = logging.getLogger(__name__)


def generation(agents: tuple[CompiledAgent, ...]) -> str:
    """A hash of the compiled agents, as `GET /agents` shows them: equal in every process
    that compiled the same files, different after any change that matters."""
    canonical = orjson.dumps([agent.to_json() for agent in agents], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:16]


@dataclass(frozen=True)
class AgentSet:
    """One compiled set and its trigger index, built together."""

    result: CompileResult
    index: TriggerIndex
    fingerprint: tuple[tuple[str, int, int], ...] = ()
    loaded_at: float = field(default_factory=time.time)
    generation: str = field(default_factory=lambda: generation(()))

    def agent(self, name: str) -> CompiledAgent | None:
        return self.result.agent(name)

    @property
    def agents(self) -> tuple[CompiledAgent, ...]:
        return self.result.agents


def _fingerprint(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime, size) of every entry below `directory` but directories: any edit
    changes it. A FIFO, socket or device counts too (stat never opens it), so one put in
    place is reported by the reload it causes.

    os.scandir, not pathlib: this runs about once a second in every worker process.
    """
    found: list[tuple[str, int, int]] = []
    todo = [str(directory)]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    stat = entry.stat()
                    found.append((entry.path, stat.st_mtime_ns, stat.st_size))
            except OSError:
                continue  # removed while we looked: the next look sees it gone
    found.sort()
    return tuple(found)


class ChangeWatch:
    """Fingerprints a directory every `interval` seconds, in one daemon thread of the process
    that starts it, and counts the changes in shared memory.

    Processes forked from that process (a worker's pool) read the count, a memory read,
    instead of each scanning the directory once a second themselves.
    """

    def __init__(self, directory: Path, *, interval: float = 1.0) -> None:
        self.directory = directory
        self.interval = interval
        # anonymous shared memory: the same counter in every process forked after this
        self._changes = RawValue(ctypes.c_uint64, 0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def changes(self) -> int:
        """How many times the directory was seen to change since the watch started."""
        return int(self._changes.value)

    def start(self) -> ChangeWatch:
        seen = _fingerprint(self.directory)
        self._thread = threading.Thread(
            target=self._run, args=(seen,), name="agents-watch", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self, seen: tuple[tuple[str, int, int], ...]) -> None:
        while not self._stop.wait(self.interval):
            try:
                now = _fingerprint(self.directory)
            except Exception:  # never let the watch die: a dead one reloads nothing
                log.exception("scanning %s for agent file changes failed", self.directory)
                continue
            if now != seen:
                seen = now
                self._changes.value += 1


def empty_set(fingerprint: tuple[tuple[str, int, int], ...] = ()) -> AgentSet:
    return AgentSet(CompileResult((), {}, (), ()), TriggerIndex(()), fingerprint)


class AgentsSource:
    """Compiles `directory` on first use and again whenever its files change.

    Without a `watch` it looks at the files itself, at most every `check_interval` seconds;
    with one it looks only when the watch has counted a change since its last look.
    The agents that compile are loaded; the errors of the rest are reported (`last_errors`).
    """

    def __init__(
        self,
        directory: Path,
        *,
        secret_names: Collection[str] = (),
        check_interval: float = 1.0,
        watch: ChangeWatch | None = None,
    ) -> None:
        self.directory = directory
        self.secret_names = tuple(secret_names)
        self.check_interval = check_interval
        self.watch = watch
        self._lock = threading.Lock()
        self._current: AgentSet | None = None
        self._checked = 0.0
        self._changes_seen = -1
        self.last_errors: tuple[str, ...] = ()

    def current(self) -> AgentSet:
        if self.watch is not None:
            # read before looking at the files: a change after this read moves the count
            # again, so it is picked up by a later call
            changes = self.watch.changes
            if self._current is not None and changes == self._changes_seen:
                return self._current
            with self._lock:
                self._changes_seen = changes
                return self._reload_if_changed()
        now = time.monotonic()
        with self._lock:
            if self._current is not None and now - self._checked < self.check_interval:
                return self._current
            self._checked = now
            return self._reload_if_changed()

    def _reload_if_changed(self) -> AgentSet:
        fingerprint = _fingerprint(self.directory)
        if self._current is None or fingerprint != self._current.fingerprint:
            self._current = self._load(fingerprint)
        return self._current

    def _load(self, fingerprint: tuple[tuple[str, int, int], ...]) -> AgentSet:
        if not fingerprint:
            self.last_errors = ()
            return empty_set(fingerprint)
        result = compile_dir(self.directory, secret_names=self.secret_names)
        self.last_errors = tuple(str(e) for e in result.errors)
        loaded = AgentSet(
            result, TriggerIndex(result.agents), fingerprint, generation=generation(result.agents)
        )
        if result.errors:
            log.error(
                "agent files in %s have %d error%s: what they name is left out, %d agent%s "
                "that compile %s loaded (generation %s):\n%s",
                self.directory,
                len(result.errors),
                "" if len(result.errors) == 1 else "s",
                len(result.agents),
                "" if len(result.agents) == 1 else "s",
                "is" if len(result.agents) == 1 else "are",
                loaded.generation,
                "\n".join(self.last_errors[:20]),
            )
        else:
            log.info(
                "loaded %d agent(s) from %s (generation %s)",
                len(result.agents),
                self.directory,
                loaded.generation,
            )
        # a large agent set is long-lived: keep it out of the collector's full passes,
        # which would otherwise stall a worker for a noticeable time every so often
        gc.freeze()
        return loaded
