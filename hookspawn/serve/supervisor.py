"""`hookspawn serve`: embedded Redis (when no URL is set) + web + worker, stopped together."""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import redis

from hookspawn.exposure import OPEN_FLAG, open_admin_refusal
from hookspawn.serve.agents_notice import agents_notice
from hookspawn.serve.demo import (
    ACCOUNT,
    INSTALLATION_ID,
    demo_environment,
    demo_notes,
    harness_note,
    record_connection,
    remove_connection,
)
from hookspawn.serve.demo_repository import demo_repository
from hookspawn.serve.forward_notice import app_secret_note, forward_lines
from hookspawn.serve.redis_server import (
    DataDirInUse,
    RedisServer,
    redis_server_version,
    stop_servers_using,
)
from hookspawn.serve.session_sandbox import (
    demo_sandbox,
    serve_sandbox,
    serve_sandbox_note,
    srt_problem,
)
from workers.github.app_registration import SECRET_FILE, data_dir_secret
from workers.lifeline import tied_to_this_process
from workers.redis_target import Sentinels
from workers.session.runner.command import Account, account_of
from workers.session.runner.roots import WorkspacesUnavailable, open_workspaces, runner_readable_dir
from workers.settings import Settings

#: held (flock) by the one `serve` running on a data directory; holds its pid
LOCK_FILE = "serve.lock"


def lock_data_dir(data_dir: Path) -> int | str:
    """Hold `data_dir/serve.lock` (flock) for as long as this process lives: the open file
    descriptor, or, when another process holds it, why this one cannot start."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        return (
            f"hookspawn serve: the data directory {data_dir} is in use by another serve "
            f"(pid {holder}, holding {path}): stop that one, or give this one its own "
            "HOOKSPAWN_DATA_DIR"
        )
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


class ProgramGroup:
    """`serve`'s programs (web, worker, runner) as child processes that live and stop together:
    when one exits or we are signalled, all are stopped; none is ever restarted (the web's
    process supervisor, hookspawn.web.server.processes.Supervisor, is the one that replaces a
    child).

    Each child leads a process group of its own (a worker's pool processes join it), so
    `stop` reaches what a child started too; and each dies with us if we are killed
    (PR_SET_PDEATHSIG), so a `kill -9` of `serve` leaves nothing running.
    """

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.stopping = False

    def spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        child = subprocess.Popen(
            args, env=env, process_group=0, preexec_fn=tied_to_this_process(signal.SIGKILL)
        )
        self.children.append((name, child))

    def wait(self) -> int:
        """Until a child exits (its code, 1 for 0) or we are signalled (0)."""
        code = self.wait_until(lambda: False)
        return 0 if code is None else code

    def wait_until(self, done: Callable[[], bool]) -> int | None:
        """Poll `done` until it holds (None), or until a child exits or we are signalled
        (the code `wait` would answer)."""
        while not self.stopping:
            for name, child in self.children:
                code = child.poll()
                if code is not None:
                    print(f"hookspawn: {name} exited with {code}; stopping", file=sys.stderr)
                    return code or 1
            if done():
                return None
            time.sleep(0.1)
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
        for _, child in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # whatever a child left in its group


def answers(host: str, port: int) -> bool:
    """Whether an HTTP server answers at `host:port` (any answer; an address to bind to, such
    as 0.0.0.0, is asked at loopback)."""
    if host in ("0.0.0.0", ""):  # noqa: S104 - asked at loopback, not bound
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    connection = http.client.HTTPConnection(host, port, timeout=2)
    try:
        connection.request("GET", "/healthz")
        connection.getresponse().read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    return True


def _child_command(*args: str) -> list[str]:
    """`python -P -m hookspawn.cli ...`: -P keeps the current directory off sys.path, so a
    folder named agents, workers, triggers or templating there cannot shadow the packages."""
    return [sys.executable, "-P", "-m", "hookspawn.cli", *args]


def _embedded_redis(data_dir: Path) -> RedisServer:
    """Start the embedded Redis, first stopping one an earlier serve left on the same AOF (we
    hold the data dir's lock, so no live serve owns it)."""
    left = stop_servers_using(data_dir)
    if left:
        pids = ", ".join(map(str, left))
        print(
            f"hookspawn: stopped redis-server pid {pids}, left running on {data_dir} "
            "by an earlier serve",
            file=sys.stderr,
            flush=True,
        )
    return RedisServer(data_dir, die_with_parent=True).start()


def _runner_account(settings: Settings) -> Account | None:
    """The account session commands run as (None: this process's, or no such user, which the
    runner refuses at its start, saying why)."""
    try:
        return account_of(settings.runner_user)
    except KeyError:
        return None


def _redis_line(settings: Settings, embedded: RedisServer | None) -> str | None:
    """The banner's line on the store: the embedded Redis, or the primary through Sentinel."""
    if embedded is not None:
        version = redis_server_version(embedded.binary)
        return (
            f"embedded Redis {embedded.url} (data in {embedded.data_dir}; redis-server "
            f"{version} at {embedded.binary})"
        )
    target = settings.redis_target
    if isinstance(target, Sentinels):
        return f"Redis primary {target.describe()} (Redis Sentinel)"
    return None


def _prepare_demo(settings: Settings, env: dict[str, str], base_url: str) -> list[str]:
    """Record the demo connection, make its repository (where the runner user can read it,
    owned by that user) and (unless HOOKSPAWN_SANDBOX_CONFIG names one) its sandbox
    configuration, all in `env`; the notes printed under the banner."""
    record_connection(env["HOOKSPAWN_REDIS_URL"])
    readable = runner_readable_dir(settings)
    data_dir = Path(os.path.abspath(settings.data_dir))
    if readable != data_dir:
        try:
            open_workspaces(settings)  # made now: the demo's repository goes in it
        except WorkspacesUnavailable:
            readable = data_dir  # the runner refuses to start, saying why
    account = _runner_account(settings)
    owner = (account.uid, account.gid) if account else None
    env["HOOKSPAWN_GIT_URL_REWRITE"] = demo_repository(readable, owner)
    notes = demo_notes(base_url, os.environ)
    notes.insert(len(notes) - 2, harness_note(settings))  # before what to try
    if not env.get("HOOKSPAWN_SANDBOX_CONFIG"):
        sandbox, note = demo_sandbox(settings.data_dir, account)
        env["HOOKSPAWN_SANDBOX_CONFIG"] = str(sandbox)
        notes.insert(len(notes) - 2, note)  # before what to try
    return notes


class _SandboxProbe:
    """`serve`'s own srt configuration (when HOOKSPAWN_SANDBOX_CONFIG is unset), probed in a
    thread while the programs start, as the runner will probe it: the banner's line."""

    def __init__(self, settings: Settings, env: dict[str, str]) -> None:
        self.path = serve_sandbox(settings.data_dir)
        env["HOOKSPAWN_SANDBOX_CONFIG"] = str(self.path)
        self.why: str | None = None
        account = _runner_account(settings)
        self.thread = threading.Thread(
            target=lambda: setattr(self, "why", srt_problem(account)), daemon=True
        )
        self.thread.start()

    def note(self) -> str:
        self.thread.join()
        return serve_sandbox_note(self.path, self.why)


def _forget_demo(redis_url: str) -> str | None:
    """The banner's line when an earlier `serve --demo` left its connection in this store,
    which is now removed (None also when that Redis does not answer: web and worker say so)."""
    try:
        if not remove_connection(redis_url):
            return None
    except redis.RedisError:
        return None
    return (
        f"removed the demo connection {ACCOUNT} (installation {INSTALLATION_ID}) an earlier "
        "`serve --demo` left"
    )


def _webhook_secret(settings: Settings, env: dict[str, str]) -> tuple[list[str], str]:
    """The webhook secrets intake verifies with, and the banner's line on them: those set (the
    App's own wins over HOOKSPAWN_WEBHOOK_SECRET), or one generated and kept in the data
    directory, which the children are given as HOOKSPAWN_WEBHOOK_SECRET_FILE in `env` (so the
    secret is in no process's environment, and `web` says where it came from)."""
    if settings.webhook_secret:
        note = app_secret_note(settings, os.environ) or "(from HOOKSPAWN_WEBHOOK_SECRET)"
        return settings.webhook_secret, note
    secret = data_dir_secret(settings.data_dir, create=True)
    assert secret is not None
    kept = settings.data_dir / SECRET_FILE
    env.pop("HOOKSPAWN_WEBHOOK_SECRET", None)  # set but empty: never beside its _FILE
    env["HOOKSPAWN_WEBHOOK_SECRET_FILE"] = str(kept.resolve())
    return [secret], f"{secret}  (kept in {kept})"


def _prepare_sessions(
    settings: Settings, env: dict[str, str], base_url: str, *, demo: bool
) -> tuple[list[str], _SandboxProbe | None]:
    """The demo's parts, or the removal of what an earlier demo left; with no dispatch target,
    sessions run here (`serve`'s own sandbox unless one is named). The notes under the banner,
    and the probe whose line joins them."""
    if demo:
        notes = _prepare_demo(settings, env, base_url)
    else:
        # a demo runs on its own Redis by URL, never through sentinels: only a store reached
        # by URL can hold what one left
        url = env.get("HOOKSPAWN_REDIS_URL")
        forgotten = _forget_demo(url) if url else None
        notes = [forgotten] if forgotten else []
    if not demo and settings.dispatch_url:
        return notes, None
    env["HOOKSPAWN_RUNNER"] = "local"  # sessions are run here, by the runner child
    if env.get("HOOKSPAWN_SANDBOX_CONFIG"):
        return notes, None
    return notes, _SandboxProbe(settings, env)


def _banner(lines: list[str]) -> None:
    """The banner in one write: whoever reads the log (a user's tail, a test) sees all of it or
    none of it, never its first line alone."""
    sys.stdout.write("".join(f"hookspawn: {line}\n" for line in lines))
    sys.stdout.flush()


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    concurrency: int,
    broker_port: int | None = None,
    allow_open_admin: bool = False,
    demo: bool = False,
) -> int:
    """`demo`: `settings` are the demo's (hookspawn.serve.demo); its children get the demo's
    environment and the demo connection is recorded in the store before they start.
    `broker_port`: the session broker's own listener (None: the port after `port`).
    Without HOOKSPAWN_DISPATCH_URL (always in the demo) sessions are run here, by a runner
    child confined by srt (hookspawn.serve.session_sandbox). The banner prints once the web
    answers."""
    broker = port + 1 if broker_port is None else broker_port
    base_url = f"http://{host}:{port}"
    refusal = open_admin_refusal(
        "serve", host, token=settings.admin_token, allowed=allow_open_admin
    )
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    lock = lock_data_dir(settings.data_dir)
    if isinstance(lock, str):
        print(lock, file=sys.stderr)
        return 1
    env = demo_environment(os.environ) if demo else dict(os.environ)
    redis_server: RedisServer | None = None
    programs = ProgramGroup()

    def on_signal(signum: int, frame: object) -> None:
        programs.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        if settings.redis_target is None:  # no URL, no sentinels: serve's own Redis
            try:
                redis_server = _embedded_redis(settings.data_dir / "redis")
            except DataDirInUse as exc:
                print(f"hookspawn serve: {exc}", file=sys.stderr)
                return 1
            env["HOOKSPAWN_REDIS_URL"] = redis_server.url
        secrets, secret_note = _webhook_secret(settings, env)
        notes, probe = _prepare_sessions(settings, env, base_url, demo=demo)
        env["HOOKSPAWN_PUBLIC_URL"] = settings.public_url or base_url
        # sessions reach the broker at its own listener, never the admin API's
        broker_url = settings.broker_public_url or f"http://{host}:{broker}"
        env["HOOKSPAWN_BROKER_PUBLIC_URL"] = broker_url
        web = ["web", "--host", host, "--port", str(port), "--broker-port", str(broker)]
        if allow_open_admin:
            web.append(OPEN_FLAG)
        programs.spawn("web", _child_command(*web), env)
        programs.spawn("worker", _child_command("worker", "--concurrency", str(concurrency)), env)
        if env.get("HOOKSPAWN_RUNNER") == "local":
            programs.spawn("runner", _child_command("runner"), env)
        # the banner once the server answers: what it says to do then works
        stopped = programs.wait_until(lambda: answers(host, port))
        if stopped is not None:
            return stopped
        lines = [
            f"serving on {base_url}",
            f"webhook URL   {base_url}/webhooks/github",
            f"webhook secret {secret_note}",
            f"deliveries and sessions at {base_url}/ui",
            f"session broker  http://{host}:{broker} (sessions reach it as {broker_url}; their "
            "broker routes only, no admin route)",
        ]
        redis_line = _redis_line(settings, redis_server)
        if redis_line:
            lines.append(redis_line)
        lines.append(agents_notice(settings.agents_dir, settings.secret_names)[1])
        lines += forward_lines(settings, secrets, base_url, demo=demo)
        _banner([*lines, *([probe.note()] if probe else []), *notes])
        return programs.wait()
    finally:
        # the runner gives its sessions their grace, then records them stopped: wait for it
        programs.stop(timeout=max(20.0, settings.runner_stop_grace.total_seconds() + 30))
        if redis_server:
            redis_server.stop()
        os.close(lock)
        print("hookspawn: stopped", flush=True)
