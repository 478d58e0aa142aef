"""A local runner for tests: bare git repositories served through a url rewrite, a real Celery
worker on the sessions queue, real HTTP."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookspawn.web.api import create_app
from tests import tool_marks
from tests.conftest import (
    in_process_worker,
    make_settings,
    running_worker,
    wait_for,
    webhook_headers,
)
from tests.live_server import live_client
from tests.procs import Proc
from workers import keys
from workers.runtime import Runtime, build_runtime
from workers.session.runner.service import RunnerService
from workers.settings import Settings

#: the account session commands run as when the tests run as root (the default setting)
RUNNER_USER = "nobody"
#: the installed console script, as `serve` runs it
HOOKSPAWN = Path(sys.executable).parent / "hookspawn"
PR_NUMBER = 2


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(cwd),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_AUTHOR_NAME": "Octo Cat",
            "GIT_AUTHOR_EMAIL": "octo@example.com",
            "GIT_COMMITTER_NAME": "Octo Cat",
            "GIT_COMMITTER_EMAIL": "octo@example.com",
        },
    )
    return done.stdout.strip()


def hand_over(path: Path) -> None:
    """Make `path` (recursively) the runner user's when running as root, as a host's
    repositories would be readable by that account."""
    if os.geteuid() != 0:
        return
    entry = pwd.getpwnam(RUNNER_USER)
    for parent, _dirs, files in os.walk(path):
        os.chown(parent, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(Path(parent) / name, entry.pw_uid, entry.pw_gid)


@dataclass
class Origin:
    """`acme/widgets` as a bare repository under `root`, with `main` and the pull request's
    head at refs/pull/2/head; owned by root, as a host's repositories would be."""

    root: Path
    main: str
    pr_head: str

    @property
    def rewrite(self) -> str:
        return f"https://github.com/=file://{self.root}/"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every account can traverse (pytest's own tmp dirs are private to root),
    for the repositories and the data directory the runner user reaches into."""
    path = Path(tempfile.mkdtemp(prefix="hookspawn-runner-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def origin(shared_dir: Path) -> Origin:
    work = shared_dir / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "README.md").write_text("widgets\n")
    (work / ".gitignore").write_text("build/\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "widgets: first")
    main = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "feature")
    (work / "widget.py").write_text("print('a widget')\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "widgets: the pull request's change")
    pr_head = git(work, "rev-parse", "HEAD")
    root = shared_dir / "git"
    bare = root / "acme" / "widgets.git"
    bare.parent.mkdir(parents=True)
    git(shared_dir, "init", "-q", "--bare", "-b", "main", str(bare))
    git(work, "push", "-q", str(bare), "main:refs/heads/main")
    git(work, "push", "-q", str(bare), f"feature:refs/pull/{PR_NUMBER}/head")
    return Origin(root=root, main=main, pr_head=pr_head)


#: an agent's harness and inline environment; `setup` is JSON (a YAML flow sequence)
RUNTIME = """
harness: claude-code
environment:
  name: {name}
  image: {{kind: preset, name: node24}}
  setup: {setup}
"""


def write_agent(
    agents_dir: Path,
    name: str,
    *,
    ref: str = "main",
    setup: list[dict[str, Any]] | None = None,
    env: str = "",
    triggers: str = "",
    mounts: str | None = None,
) -> None:
    """An agent checking out acme/widgets (auth none) at /workspace/widgets unless `mounts`
    says otherwise, with its own environment (named after it) and setup entries."""
    mount_block = (
        mounts
        if mounts is not None
        else textwrap.dedent(
            f"""\
            mounts:
              - kind: git
                repository: acme/widgets
                mountPath: /workspace/widgets
                ref: {ref}
                auth: {{kind: none}}
            """
        )
    )
    text = (
        f"name: {name}\n"
        + RUNTIME.format(name=f"{name}-env", setup=json.dumps(setup or []))
        + mount_block
        + env
        + triggers
    )
    path = agents_dir / "agents" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def sandbox_file(
    directory: Path,
    *,
    backend: str = "srt",
    mounts: list[dict[str, str]] | None = None,
    env: dict[str, str] | None = None,
    name: str = "sandbox.json",
) -> Path:
    """A sandbox configuration (HOOKSPAWN_SANDBOX_CONFIG) in `directory`; the test runs srt,
    so it is skipped where srt (or what srt runs) is missing (tests/tool_marks.py)."""
    if backend == "srt":
        tool_marks.require("srt")
    path = directory / name
    sandbox = {"backend": backend, "mounts": mounts or [], "env": env or {}}
    path.write_text(json.dumps({"sandbox": sandbox}))
    path.chmod(0o644)
    return path


def runner_settings(redis_url: str, shared_dir: Path, origin: Origin, **overrides: Any) -> Settings:
    """The runner's settings for a test: setup and harness confined by the real sandbox (srt,
    no mounts) unless `sandbox_config` says otherwise; without a model key the agent's harness
    is skipped."""
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "data_dir": shared_dir / "data",
        "agents_dir": shared_dir / ".auto",
        "runner": "local",
        "git_url_rewrite": [origin.rewrite],
        "runner_lease_seconds": 10.0,
        "setup_timeout": 60.0,
        # no model key here: the agent's harness is skipped, the session ends after setup
        "harness_without_key": "skip",
    }
    if "sandbox_config" not in overrides:
        values["sandbox_config"] = sandbox_file(shared_dir)
    values.update(overrides)
    return make_settings(**values)


@contextmanager
def running_runner(
    settings: Settings,
    *,
    concurrency: int = 2,
    requeue_after: float = 300.0,
    prepare: Callable[[RunnerService], None] | None = None,
) -> Iterator[RunnerService]:
    """`hookspawn runner` in this process: a real Celery worker (threads) on the sessions
    queue, and its sweep; `prepare` sees the service before its worker takes a session.

    A delivery worker in this process (`running_worker`) keeps taking deliveries beside it
    (`in_process_worker`); leaving either may stop both (Celery's stop flag is per process)."""
    service = RunnerService(settings, requeue_after=requeue_after)
    if prepare is not None:
        prepare(service)
    sweeper = service.sweeper.start()
    try:
        with in_process_worker(
            service.celery, concurrency=concurrency, queues=[keys.SESSIONS_QUEUE]
        ):
            yield service
    finally:
        sweeper.stop()
        service.close()


def dispatched_session(http: httpx.Client, raw: bytes, delivery: str) -> str:
    """POST `raw` as a signed pull_request delivery; the one session it dispatched."""
    answer = http.post(
        "/webhooks/github", content=raw, headers=webhook_headers(raw, "pull_request", delivery)
    )
    assert answer.status_code == 202, answer.text
    outcomes: list[dict[str, Any]] = []

    def dispatched() -> bool:
        outcomes[:] = http.get(f"/deliveries/{delivery}").json().get("outcomes") or []
        return bool(outcomes)

    wait_for(
        dispatched, what=lambda: f"delivery {delivery}: {http.get(f'/deliveries/{delivery}').text}"
    )
    assert [o["outcome"] for o in outcomes] == ["dispatched"], outcomes
    return str(outcomes[0]["sessionId"])


@dataclass
class Hookspawn:
    rt: Runtime
    http: httpx.Client
    settings: Settings

    def start(self, agent: str, **body: Any) -> str:
        answer = self.http.post(f"/agents/{agent}/sessions", json=body)
        assert answer.status_code == 201, answer.text
        session_id: str = answer.json()["id"]
        return session_id

    def session(self, session_id: str) -> dict[str, Any]:
        answer = self.http.get(f"/sessions/{session_id}")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def wait_status(self, session_id: str, *statuses: str, timeout: float = 30) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def reached() -> bool:
            seen.update(self.session(session_id))
            return seen.get("status") in statuses

        # a session takes seconds: polling five times a second is soon enough, and each poll
        # is a request this process serves too
        wait_for(reached, timeout=timeout, interval=0.2)
        return seen


@contextmanager
def hookspawn_web(settings: Settings, *, worker: bool = False) -> Iterator[Hookspawn]:
    """The web app over real HTTP (and, with `worker`, a delivery worker) on `settings`."""
    rt = build_runtime(settings)
    try:
        with live_client(create_app(rt)) as http:
            if worker:
                with running_worker(rt):
                    yield Hookspawn(rt, http, settings)
            else:
                yield Hookspawn(rt, http, settings)
    finally:
        rt.close()


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment a `hookspawn` process needs to run with `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    values = {
        "REDIS_URL": settings.redis_url or "",
        "DATA_DIR": str(settings.data_dir),
        "AGENTS_DIR": str(settings.agents_dir),
        "RUNNER": settings.runner or "",
        "GIT_URL_REWRITE": ",".join(settings.git_url_rewrite),
        "RUNNER_LEASE_SECONDS": str(settings.runner_lease_seconds),
        "SETUP_TIMEOUT": str(settings.setup_timeout),
        "HARNESS_COMMAND": settings.harness_command or "",
        "HARNESS_WITHOUT_KEY": settings.harness_without_key,
        "ANTHROPIC_BASE_URL": settings.anthropic_base_url,
        "OPENAI_BASE_URL": settings.openai_base_url,
        "SANDBOX_CONFIG": str(settings.sandbox_config or ""),
        "WEBHOOK_SECRET": ",".join(settings.webhook_secret),
        "LOG_LEVEL": "WARNING",
    }
    env.update({f"HOOKSPAWN_{k}": v for k, v in values.items() if v})
    return env


@contextmanager
def runner_process(
    settings: Settings,
    log: Path,
    *,
    concurrency: int = 2,
    grace: str = "5s",
    env: Mapping[str, str] | None = None,
) -> Iterator[Proc]:
    """`hookspawn runner` as its own process (group), as `serve` starts it; `grace`: its
    HOOKSPAWN_RUNNER_STOP_GRACE (short, so a test's stop never waits long); `env`: more of its
    environment."""
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [str(HOOKSPAWN), "runner", "--concurrency", str(concurrency)],
            env={
                **settings_env(settings),
                "HOOKSPAWN_RUNNER_STOP_GRACE": grace,
                **(env or {}),
            },
            stdout=out,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
    proc = Proc("runner", popen, log)
    try:
        yield proc
    finally:
        proc.stop()
