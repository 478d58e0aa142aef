"""`hookspawn runner`: a Celery worker on the sessions queue that runs sessions, plus the sweep
that fails sessions whose runner was lost."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery, signals

from agents.sandbox.config import SandboxConfig
from workers import keys
from workers.celery_app import make_celery
from workers.redis_connection import redis_client
from workers.session.runner.command import account_of
from workers.session.runner.prune import SessionPruner
from workers.session.runner.queue import RUN_SESSION
from workers.session.runner.roots import open_workspaces
from workers.session.runner.run import SessionRunner
from workers.session.runner.run_credentials import RunCredentials
from workers.session.runner.sandbox import (
    SRT_SHARED_TMP,
    SandboxUnavailable,
    host_paths_for,
    open_sandbox,
)
from workers.session.runner.session_git import admin_destinations
from workers.session.runs import SessionRuns
from workers.session.stores import SessionStores
from workers.settings import Settings

__all__ = ["RunnerService", "open_runner_sandbox", "run_runner"]

log = logging.getLogger(__name__)


#: a session still queued this long after it was queued is queued again (its message may be
#: lost); longer than a session usually waits for a free runner, so duplicates stay rare
REQUEUE_AFTER = 300.0
#: how often a runner removes the files of sessions whose records have expired
PRUNE_EVERY = 600.0


class _Sweeper:
    """Every few seconds, fail the sessions whose lease ran out (their runner is gone) and
    queue again the sessions left queued too long; every `prune_every`, remove the files of
    sessions whose records have expired and the setup snapshots past their reuse window."""

    def __init__(
        self,
        runs: SessionRuns,
        interval: float,
        requeue: Callable[[str], None],
        requeue_after: float,
        prune: Callable[[], None],
        prune_every: float,
    ) -> None:
        self.runs, self.interval = runs, interval
        self.requeue, self.requeue_after = requeue, requeue_after
        self.prune, self.prune_every = prune, prune_every
        self._next_prune = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="runner-sweep")

    def _loop(self) -> None:
        while True:
            try:
                for session_id in self.runs.sweep_lost():
                    log.warning("session %s: its runner was lost; failed (runner_lost)", session_id)
                for session_id in self.runs.waiting_since(self.requeue_after):
                    log.warning("session %s: still queued; queued again", session_id)
                    self.requeue(session_id)
                if time.monotonic() >= self._next_prune:
                    self._next_prune = time.monotonic() + self.prune_every
                    self.prune()
            except redis.RedisError as exc:
                log.warning("runner sweep failed: %s", exc)
            if self._stop.wait(self.interval):
                return

    def start(self) -> _Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def open_runner_sandbox(settings: Settings) -> SandboxConfig | SandboxUnavailable:
    """The sandbox HOOKSPAWN_SANDBOX_CONFIG names, validated and probed once at start; when it
    cannot start, why (logged once here; every session is then failed, none runs unconfined)."""
    try:
        config = open_sandbox(
            settings.sandbox_config,
            host=host_paths_for(settings.data_dir),
            account=account_of(settings.runner_user),
        )
    except SandboxUnavailable as exc:
        log.error(
            "sandbox unavailable, sessions are refused (failed: sandbox_unavailable): %s", exc
        )
        return exc
    if config.backend == "none":
        log.warning(
            "sandbox backend none (%s): setup and harness commands run UNCONFINED on this host",
            settings.sandbox_config,
        )
    else:
        if os.path.exists(SRT_SHARED_TMP):
            log.warning(
                "%s exists on this host: srt shows it (read-only) to every session; remove it "
                "unless something on this host needs it",
                SRT_SHARED_TMP,
            )
        log.info(
            "sandbox %s from %s: %d mount(s), network to %s (each session also to its broker "
            "and its git hosts, never to the admin API at %s); setup and harness commands run "
            "confined",
            config.backend,
            settings.sandbox_config,
            len(config.mounts),
            ", ".join(settings.sandbox_allowed_domains) or "no domain",
            ", ".join(admin_destinations(settings.public_url, settings.url)),
        )
    return config


def log_harnesses(runner: SessionRunner) -> None:
    """Say which harnesses this runner can start (and why not the others)."""
    settings = runner.settings
    if settings.harness_command:
        log.info("harness: HOOKSPAWN_HARNESS_COMMAND for every agent")
        return
    for found in runner.harnesses.programs().values():
        if found.problem is None:
            log.info("harness %s", found.line())
        elif settings.harness_without_key == "skip" and found.program is not None:
            log.warning("harness %s: its sessions end after setup", found.line())
        else:
            log.warning("harness %s: its sessions fail harness_unavailable", found.line())


class RunnerService:
    """The runner's Celery app with `run_session` bound to one SessionRunner; the Redis client
    and the session stores are `stores` (built here when not given), which the service closes
    with itself."""

    def __init__(
        self,
        settings: Settings,
        *,
        stores: SessionStores | None = None,
        requeue_after: float = REQUEUE_AFTER,
        prune_every: float = PRUNE_EVERY,
    ) -> None:
        target = settings.redis_target
        if target is None:
            raise ValueError(
                "no Redis: set HOOKSPAWN_REDIS_URL (or HOOKSPAWN_REDIS_SENTINELS with "
                "HOOKSPAWN_REDIS_SENTINEL_MASTER) or use `hookspawn serve`"
            )
        self.settings = settings
        log.info("session roots in %s", open_workspaces(settings))
        rt = self.stores = stores or SessionStores(redis_client(target), settings)
        self.client = rt.client
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        held = RunCredentials(rt.credentials, rt.sessions)
        self.runner = SessionRunner(
            settings,
            self.client,
            owner,
            sandbox=open_runner_sandbox(settings),
            issue_credential=held.issue,
            end_credential=held.end,  # before the run's terminal status is written
        )
        log_harnesses(self.runner)
        self.celery: Celery = make_celery(target)
        # a session runs as long as its harness does: no task time limit on this queue. No
        # remote control either: nothing broadcasts to runners, so no pub/sub channel to hold
        self.celery.conf.update(
            task_time_limit=None, task_soft_time_limit=None, worker_enable_remote_control=False
        )
        runner = self.runner

        # acks late: a session a runner took and lost is failed by the sweep, and its message
        # coming back later finds it no longer queued
        @self.celery.task(  # type: ignore[untyped-decorator]
            name=RUN_SESSION, acks_late=True, shared=False
        )
        def run_session(session_id: str) -> str:
            outcome = runner.run(session_id)
            if outcome != "not queued":  # ended with its run already; also when the run broke
                held.end(session_id)
            return outcome

        self.sweeper = _Sweeper(
            rt.runs,
            interval=min(5.0, settings.runner_lease_seconds / 2),
            requeue=self.enqueue,
            requeue_after=requeue_after,
            prune=SessionPruner(
                self.client, settings.data_dir, runner.snapshots, runner.workspaces
            ).prune,
            prune_every=prune_every,
        )

    def enqueue(self, session_id: str) -> None:
        self.celery.send_task(RUN_SESSION, args=[session_id], queue=keys.SESSIONS_QUEUE)

    def worker(self, concurrency: int) -> Any:
        """A Celery worker (threads: a session mostly waits on its commands) on the sessions
        queue only, so spawn work never waits behind sessions and sessions never run in the
        delivery workers."""
        return self.celery.Worker(
            concurrency=concurrency,
            pool="threads",
            queues=[keys.SESSIONS_QUEUE],
            loglevel="INFO",
            without_heartbeat=True,
            without_gossip=True,
            without_mingle=True,
        )

    def close(self) -> None:
        with contextlib.suppress(redis.RedisError):
            self.stores.close()


def run_runner(settings: Settings, concurrency: int) -> int:
    service = RunnerService(settings)
    sweeper = service.sweeper.start()

    # SIGTERM (Celery's warm shutdown, which then waits for the running sessions) or a cold
    # one: the runner says at once what it does and stops its sessions after their grace
    def stopping(how: str = "Warm", **_: Any) -> None:
        service.runner.stop.begin(cold=how == "Cold")

    signals.worker_shutting_down.connect(stopping, weak=False)
    try:
        worker = service.worker(concurrency)
        worker.start()
        service.runner.stop.said()
        return int(worker.exitcode or 0)
    finally:
        sweeper.stop()
        service.close()
