"""A Redis primary, its replicas and the sentinels watching them: real `redis-server`
processes (a sentinel is the same binary with `--sentinel`), for the tests and bench/."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import redis

from hookspawn.serve.redis_server import free_port, redis_server_binary
from tests.conftest import wait_for
from workers.lifeline import tied_to_this_process
from workers.redis_target import Sentinels

MASTER = "hookspawn"


def _quoted(value: str) -> str:
    """A configuration file's quoted argument."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Node:
    """One redis-server (a data node or a sentinel) on 127.0.0.1, in its own process group,
    sent SIGTERM when the process that started it dies."""

    def __init__(self, root: Path, name: str, args: list[str], *, password: str | None) -> None:
        self.dir = root / name
        self.name = name
        self.port = free_port()
        self.args = args
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> Node:
        self.dir.mkdir(parents=True, exist_ok=True)
        with (self.dir / "stderr.log").open("ab") as stderr:
            self.process = subprocess.Popen(
                [*self.args, *extra],
                cwd=self.dir,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=tied_to_this_process(signal.SIGTERM),
            )
        wait_for(self.answers, 15.0, 0.02, what=f"{self.name} answering on {self.port}")
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(
            port=self.port, password=self.password, socket_timeout=2, socket_connect_timeout=1
        )

    def answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            logs = [self.dir / "stderr.log", self.dir / "redis.log"]
            said = "".join(log.read_text(errors="replace") for log in logs if log.exists())
            raise RuntimeError(f"{self.name} exited:\n{said[-2000:]}")
        client = self.client()
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class SentinelGroup:
    """A primary, `replicas` replicas and `sentinels` sentinels (quorum: a majority of them),
    all with `password` when given (the sentinels with `sentinel_password`).

    `down_after_ms`: how long a primary is silent before a sentinel counts it down. The data
    nodes write an AOF with `appendfsync`; a node killed and started again keeps its data."""

    def __init__(
        self,
        root: Path,
        *,
        replicas: int = 1,
        sentinels: int = 3,
        down_after_ms: int = 1000,
        appendfsync: str = "always",
        password: str | None = None,
        sentinel_password: str | None = None,
    ) -> None:
        self.root = root
        self.password = password
        self.sentinel_password = sentinel_password
        self.down_after_ms = down_after_ms
        binary = redis_server_binary()
        self.data: list[Node] = []
        for n in range(replicas + 1):
            node = Node(root, f"redis-{n}", [], password=password)
            node.args = [
                binary,
                "--bind", "127.0.0.1",
                "--port", str(node.port),
                "--dir", str(node.dir.resolve()),
                "--appendonly", "yes",
                "--appendfsync", appendfsync,
                "--save", "",
                "--maxmemory-policy", "noeviction",
                # a replica (re)joining is synced at once, not after Redis 7's 5 s default
                "--repl-diskless-sync-delay", "0",
                "--logfile", str((node.dir / "redis.log").resolve()),
                *(["--requirepass", password, "--masterauth", password] if password else []),
            ]  # fmt: skip
            self.data.append(node)
        self.sentinels = [
            Node(root, f"sentinel-{n}", [], password=sentinel_password) for n in range(sentinels)
        ]
        self.quorum = sentinels // 2 + 1
        self._binary = binary

    # -- starting ----------------------------------------------------------------------------
    def _sentinel_conf(self, node: Node, primary: Node) -> Path:
        lines = [
            f"port {node.port}",
            "bind 127.0.0.1",
            f"dir {node.dir.resolve()}",
            f"logfile {(node.dir / 'redis.log').resolve()}",
            f"sentinel monitor {MASTER} 127.0.0.1 {primary.port} {self.quorum}",
            f"sentinel down-after-milliseconds {MASTER} {self.down_after_ms}",
            f"sentinel failover-timeout {MASTER} 10000",
            f"sentinel parallel-syncs {MASTER} 1",
        ]
        if self.password:
            lines.append(f"sentinel auth-pass {MASTER} {_quoted(self.password)}")
        if self.sentinel_password:
            lines.append(f"requirepass {_quoted(self.sentinel_password)}")
            lines.append(f"sentinel sentinel-pass {_quoted(self.sentinel_password)}")
        node.dir.mkdir(parents=True, exist_ok=True)
        conf = node.dir / "sentinel.conf"
        conf.write_text("\n".join(lines) + "\n")  # the sentinel rewrites it as it learns
        return conf

    def start(self) -> SentinelGroup:
        primary, *replicas = self.data
        primary.start()
        for replica in replicas:
            replica.start("--replicaof", "127.0.0.1", str(primary.port))
        for node in self.sentinels:
            node.args = [self._binary, str(self._sentinel_conf(node, primary)), "--sentinel"]
            node.start()
        # a sentinel learns of the replicas from the primary's INFO (every 10 s) and of the
        # other sentinels from their hellos (every 2 s)
        wait_for(self._settled, 90.0, 0.1, what="the sentinels seeing every node and each other")
        return self

    def _settled(self) -> bool:
        primary = self.primary_port()
        want_replicas = len(self.data) - 1
        for node in self.sentinels:
            client = node.client()
            try:
                state: Any = client.sentinel_master(MASTER)
                if state["port"] != primary or int(state["num-slaves"]) < want_replicas:
                    return False
                if int(state["num-other-sentinels"]) < len(self.sentinels) - 1:
                    return False
            except redis.RedisError:
                return False
            finally:
                client.close()
        node = self.node_at(primary)
        client = node.client()
        try:
            info = client.info("replication")
            online = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
            return sum(1 for v in online if v.get("state") == "online") >= want_replicas
        finally:
            client.close()

    # -- reading -----------------------------------------------------------------------------
    @property
    def target(self) -> Sentinels:
        return Sentinels(
            tuple(("127.0.0.1", node.port) for node in self.sentinels),
            MASTER,
            sentinel_password=self.sentinel_password,
            password=self.password,
        )

    def env(self) -> dict[str, str]:
        """The settings of a hookspawn process finding the primary through these sentinels."""
        env = {
            "HOOKSPAWN_REDIS_SENTINELS": ",".join(f"127.0.0.1:{n.port}" for n in self.sentinels),
            "HOOKSPAWN_REDIS_SENTINEL_MASTER": MASTER,
        }
        if self.password:
            env["HOOKSPAWN_REDIS_PASSWORD"] = self.password
        if self.sentinel_password:
            env["HOOKSPAWN_REDIS_SENTINEL_PASSWORD"] = self.sentinel_password
        return env

    def primary_port(self) -> int:
        """The primary's port as the first sentinel that answers gives it."""
        for node in self.sentinels:
            client = node.client()
            try:
                address: Any = client.sentinel_get_master_addr_by_name(MASTER)
                return int(address[1])
            except (redis.RedisError, TypeError):
                continue
            finally:
                client.close()
        raise RuntimeError("no sentinel answered where the primary is")

    def node_at(self, port: int) -> Node:
        return next(node for node in self.data if node.port == port)

    def primary(self) -> Node:
        return self.node_at(self.primary_port())

    # -- breaking ----------------------------------------------------------------------------
    def kill_primary(self) -> Node:
        """SIGKILL the primary; the node killed."""
        node = self.primary()
        node.kill()
        return node

    def wait_failover(self, away_from: int, timeout: float = 60.0) -> int:
        """Until every sentinel names a primary other than `away_from`; its port."""

        def moved() -> bool:
            ports = set()
            for node in self.sentinels:
                client = node.client()
                try:
                    address: Any = client.sentinel_get_master_addr_by_name(MASTER)
                    ports.add(int(address[1]))
                except (redis.RedisError, TypeError):
                    return False
                finally:
                    client.close()
            return len(ports) == 1 and away_from not in ports

        wait_for(moved, timeout, 0.05, what=f"a failover away from port {away_from}")
        return self.primary_port()

    def wait_replicas(self, count: int, timeout: float = 60.0) -> None:
        """Until the primary has `count` replicas online."""

        def online() -> bool:
            client = self.primary().client()
            try:
                return int(client.info("replication").get("connected_slaves", 0)) >= count
            except redis.RedisError:
                return False
            finally:
                client.close()

        wait_for(online, timeout, 0.05, what=f"{count} replicas online")

    def stop(self) -> None:
        for node in [*self.sentinels, *self.data]:
            with contextlib.suppress(OSError):
                node.stop()

    def __enter__(self) -> SentinelGroup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
