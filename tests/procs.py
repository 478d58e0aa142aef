"""The subprocesses of the tests and of bench/: launched one per process group, read from /proc."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from hookspawn.serve.redis_server import free_port
from tests import loopback
from tests.conftest import wait_for

ROOT = Path(__file__).resolve().parents[1]

#: `hookspawn …` as this interpreter runs it, from the checkout
HOOKSPAWN = (sys.executable, "-m", "hookspawn.cli")

#: the installed console script, as a user runs it (not `python -m`, which would put the
#: current directory first on sys.path)
HOOKSPAWN_SCRIPT = Path(sys.executable).parent / "hookspawn"

#: how long `hookspawn serve` may take to answer /readyz: a bound, not a timing (it starts four
#: interpreters: web, worker, runner, redis-server; many seconds on a loaded two-core machine)
SERVE_READY_TIMEOUT = 90.0


@dataclass
class Proc:
    """One subprocess (`hookspawn web|worker`, a no-op worker) in its own process group,
    logging to a file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, size: int = 3000) -> str:
        return self.log_text()[-size:]

    def worker_children(self) -> list[int]:
        return [pid for pid in process_tree(self.pid) if pid != self.pid]

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the group (a worker's warm shutdown), then SIGKILL whatever is left."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgrp) of a process, from /proc; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[2])


def cmdline(pid: int) -> str:
    """A process's command line, its arguments joined by spaces; "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def environ(pid: int) -> bytes:
    """A process's environment as /proc has it (`NAME=value`, NUL-separated); b"" when it is
    gone."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    """Whether `pid` is a process that is neither a zombie nor dead."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def live_processes() -> Iterator[tuple[int, int, int]]:
    """(pid, ppid, pgrp) of every process that is neither a zombie nor dead."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] not in ("Z", "X"):
                yield int(entry.name), stat[1], stat[2]


def children_of(pid: int) -> list[int]:
    return [p for p, ppid, _ in live_processes() if ppid == pid]


def group_members(pgid: int) -> list[int]:
    return [p for p, _, pgrp in live_processes() if pgrp == pgid]


def process_tree(root: int) -> list[int]:
    """`root` and every live descendant."""
    parents = {pid: ppid for pid, ppid, _ in live_processes()}
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        tree += frontier
    return tree


def status_kb(pid: int, name: str) -> int:
    """A `kB` field of /proc/PID/status (VmRSS, VmHWM); 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without any `HOOKSPAWN_*` of its own, then `settings`;
    output unbuffered, so a log shows what happened up to a crash."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(settings)
    return env


def launch(
    name: str, argv: Sequence[str], *, env: Mapping[str, str], log: Path, cwd: Path = ROOT
) -> Proc:
    """Start `argv` in a process group of its own, stdin closed, stdout and stderr to `log`."""
    with log.open("wb") as handle:
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Proc(name, popen, log)


def wait_ready(proc: Proc, timeout: float) -> None:
    """Until a Celery worker logs that it is ready; fails at once when it exits."""

    def ready() -> bool:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}")
        return " ready." in proc.log_text()

    wait_for(ready, timeout, 0.1, what=f"{proc.name} ready")


def wait_answering(proc: Proc, url: str, timeout: float) -> None:
    """Until `hookspawn web` at `url` answers /healthz; fails at once when it exits."""

    def up() -> bool:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}")
        try:
            return loopback.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, timeout, 0.1, what=f"{proc.name} answering {url}/healthz")


@dataclass
class Served:
    """A `hookspawn serve` started from `cwd`, listening at `url`."""

    proc: Proc
    url: str
    cwd: Path

    @property
    def log(self) -> Path:
        return self.proc.log


def start_serve(
    cwd: Path,
    env: Mapping[str, str],
    *args: str,
    argv: Sequence[str] = (str(HOOKSPAWN_SCRIPT), "serve"),
    log: Path | None = None,
) -> Served:
    """`argv` (`hookspawn serve`, or a README line of it) on a free port and a free broker port,
    with `args` after, from `cwd`, logging to `log` (cwd/serve.log); not waited for."""
    port = free_port()
    command = [*argv, "--port", str(port), "--broker-port", str(free_port()), *args]
    proc = launch("serve", command, env=env, log=log or cwd / "serve.log", cwd=cwd)
    return Served(proc, f"http://127.0.0.1:{port}", cwd)


def wait_serving(served: Served, timeout: float = SERVE_READY_TIMEOUT) -> None:
    """Until serve answers /readyz 200 (its Redis, web and worker up) and has printed its
    banner (it does once the server answers); fails at once when it exits, with its log."""

    def ready() -> bool:
        if not served.proc.alive():
            raise AssertionError(
                f"serve exited with {served.proc.popen.returncode}:\n{served.proc.log_text()}"
            )
        try:
            if loopback.get(f"{served.url}/readyz", timeout=1).status_code != 200:
                return False
        except httpx.HTTPError:
            return False
        return "serving on " in served.proc.log_text()

    wait_for(ready, timeout, 0.1, what=f"serve answering {served.url}/readyz, its banner printed")


@contextlib.contextmanager
def serving(
    cwd: Path,
    env: Mapping[str, str],
    *args: str,
    argv: Sequence[str] = (str(HOOKSPAWN_SCRIPT), "serve"),
    log: Path | None = None,
) -> Iterator[Served]:
    """`hookspawn serve` (start_serve), ready; stopped with everything it started after."""
    served = start_serve(cwd, env, *args, argv=argv, log=log)
    try:
        wait_serving(served)
        yield served
    finally:
        served.proc.stop(60)
