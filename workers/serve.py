"""`hookspawn serve`: embedded Redis (when no URL is set) + web + worker, stopped together."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from workers.agents_notice import agents_notice
from workers.demo import demo_environment, demo_notes, record_connection
from workers.redis_server import RedisServer
from workers.settings import Settings

SECRET_FILE = "webhook-secret"  # noqa: S105 - a file name


def data_dir_secret(data_dir: Path, *, create: bool) -> str | None:
    """The webhook secret kept in the data dir, generated (mode 0600) on first use."""
    path = data_dir / SECRET_FILE
    if path.exists():
        return path.read_text().strip() or None
    if not create:
        return None
    data_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    return value


class Supervisor:
    """Runs child processes; when one exits or we are signalled, stops them all."""

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.stopping = False

    def spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        self.children.append((name, subprocess.Popen(args, env=env)))

    def wait(self) -> int:
        while not self.stopping:
            for name, child in self.children:
                code = child.poll()
                if code is not None:
                    print(f"hookspawn: {name} exited with {code}; stopping", file=sys.stderr)
                    return code or 1
            time.sleep(0.2)
        return 0

    def stop(self, timeout: float = 20.0) -> None:
        self.stopping = True
        for _, child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for _, child in self.children:
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def serve(settings: Settings, *, host: str, port: int, concurrency: int, demo: bool = False) -> int:
    """`demo`: `settings` are the demo's (workers.demo); its children get the demo's environment
    and the demo connection is recorded in the store before they start."""
    env = demo_environment(os.environ) if demo else dict(os.environ)
    notes: list[str] = []
    redis_server: RedisServer | None = None
    supervisor = Supervisor()

    def on_signal(signum: int, frame: object) -> None:
        supervisor.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        if not settings.redis_url:
            redis_server = RedisServer(settings.data_dir / "redis").start()
            env["HOOKSPAWN_REDIS_URL"] = redis_server.url
        secret_note = "(from HOOKSPAWN_WEBHOOK_SECRET)"  # noqa: S105 - a label
        if not settings.webhook_secret:
            secret = data_dir_secret(settings.data_dir, create=True)
            assert secret is not None
            env["HOOKSPAWN_WEBHOOK_SECRET"] = secret
            secret_note = f"{secret}  (kept in {settings.data_dir / SECRET_FILE})"
        if demo:
            record_connection(env["HOOKSPAWN_REDIS_URL"])
            notes = demo_notes(f"http://{host}:{port}", os.environ)
        exe = [sys.executable, "-m", "workers.cli"]
        supervisor.spawn("web", [*exe, "web", "--host", host, "--port", str(port)], env)
        supervisor.spawn("worker", [*exe, "worker", "--concurrency", str(concurrency)], env)
        print(f"hookspawn: serving on http://{host}:{port}", flush=True)
        print(f"hookspawn: webhook URL   http://{host}:{port}/webhooks/github", flush=True)
        print(f"hookspawn: webhook secret {secret_note}", flush=True)
        print(f"hookspawn: deliveries and sessions at http://{host}:{port}/ui", flush=True)
        if redis_server:
            print(f"hookspawn: embedded Redis {redis_server.url} (data in {redis_server.data_dir})")
        _, agents_line = agents_notice(settings.agents_dir, settings.secret_names)
        print(f"hookspawn: {agents_line}", flush=True)
        for note in notes:
            print(f"hookspawn: {note}", flush=True)
        return supervisor.wait()
    finally:
        supervisor.stop()
        if redis_server:
            redis_server.stop()
        print("hookspawn: stopped", flush=True)
