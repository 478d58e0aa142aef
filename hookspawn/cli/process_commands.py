"""The verbs that run a long-lived process: `serve`, `web`, `worker` and `runner`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from hookspawn.cli.settings import load_settings
from hookspawn.errors import CommandError
from hookspawn.serve.agents_notice import log_agents
from hookspawn.serve.start_checks import broker_port, require_port, require_redis
from workers.settings import Settings

log = logging.getLogger("hookspawn")


def _logging(settings: Settings) -> None:
    # A worker logs a line per delivery; neither this format nor Celery's own read the
    # thread, the pid or the caller's file and line, so they are not collected (the switches
    # the `logging` docs list under "Optimization"). %(processName)s stays: Celery's uses it.
    logging.logThreads = False
    logging.logProcesses = False
    logging._srcfile = None
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _quiet_celery_start() -> None:
    """Above DEBUG, a Celery worker starts without its banner (its `ready.` line says it is up)
    and without its warning about running as root, which is about pickled messages: the
    queues of hookspawn accept JSON only. At DEBUG both stay, as Celery prints them."""
    if logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
        return
    from celery.exceptions import SecurityWarning
    from celery.signals import celeryd_init

    warnings.filterwarnings("ignore", category=SecurityWarning)

    def quiet(instance: object = None, **_: object) -> None:
        # the worker reads it when it starts, after this signal
        setattr(instance, "quiet", True)  # noqa: B010

    celeryd_init.connect(quiet, weak=False)


def serve(args: argparse.Namespace) -> int:
    from hookspawn.exposure import open_admin_refusal
    from hookspawn.serve.demo import demo_settings
    from hookspawn.serve.supervisor import serve as run

    settings = demo_settings(load_settings()) if args.demo else load_settings()
    refusal = open_admin_refusal(
        "serve", args.host, token=settings.admin_token, allowed=args.allow_open_admin
    )
    if refusal:  # before anything is checked or started
        print(refusal, file=sys.stderr)
        return 2
    require_port(args.host, args.port)
    broker = broker_port(settings, args.port, args.broker_port)
    require_port(args.host, broker, "--broker-port")
    return run(
        settings,
        host=args.host,
        port=args.port,
        broker_port=broker,
        concurrency=args.concurrency,
        allow_open_admin=args.allow_open_admin,
        demo=args.demo,
    )


def web(args: argparse.Namespace) -> int:
    from hookspawn.exposure import open_admin_refusal, open_admin_warning

    settings = load_settings()
    token = settings.admin_token
    refusal = open_admin_refusal("web", args.host, token=token, allowed=args.allow_open_admin)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    require_redis(settings, "web")
    require_port(args.host, args.port)
    broker = broker_port(settings, args.port, args.broker_port)
    require_port(args.host, broker, "--broker-port")
    # the server's modules (seconds of imports) only once nothing above refused the start
    from hookspawn.web.server.http_server import serve_web
    from workers.runtime import build_runtime

    _logging(settings)
    warning = open_admin_warning(args.host, args.port, token=token)
    if warning:
        logging.getLogger("hookspawn.web").warning("%s", warning)
    if not settings.webhook_secret:
        logging.getLogger("hookspawn.web").warning(
            "no HOOKSPAWN_WEBHOOK_SECRET: every delivery is refused (401) until it is set to "
            "the GitHub App's webhook secret"
        )
    else:
        from workers.github.app_registration import webhook_secret_source

        logging.getLogger("hookspawn.web").info(
            "webhook secret: %s", webhook_secret_source(settings, os.environ)
        )
    log_agents(log, settings.agents_dir, settings.secret_names)
    if args.workers > 1:
        from hookspawn.web.server.processes import serve_processes

        return serve_processes(
            settings,
            host=args.host,
            port=args.port,
            broker_port=broker,
            access_log=args.access_log,
            workers=args.workers,
        )
    rt = build_runtime(settings)
    try:
        serve_web(
            rt, host=args.host, port=args.port, broker_port=broker, access_log=args.access_log
        )
    finally:
        rt.close()
    return 0


def worker(args: argparse.Namespace) -> int:
    from celery.signals import worker_process_shutdown

    from workers.agents_source import ChangeWatch
    from workers.delivery.sweep import Sweeper
    from workers.delivery.upkeep import IndexUpkeep
    from workers.runtime import build_runtime

    settings = load_settings()
    require_redis(settings, "worker")
    _logging(settings)
    # two INFO lines per task (received, succeeded) cost CPU at load and say less than the
    # delivery record does; HOOKSPAWN_LOG_LEVEL=DEBUG brings them back
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in ("celery.app.trace", "celery.worker.strategy"):
            logging.getLogger(name).setLevel(logging.WARNING)
    log_agents(log, settings.agents_dir, settings.secret_names)
    _quiet_celery_start()
    if os.geteuid() == 0:
        log.info(
            "the worker runs as root: Celery warns against that because a pickled message could "
            "run code as root, and this worker accepts JSON messages only (run it as another "
            "user to avoid root altogether)"
        )
    # one scan of the agent files a second for the whole worker, not one per pool process:
    # started before the pool is forked, which then reads its change count
    watch = ChangeWatch(settings.agents_dir).start()
    rt = build_runtime(settings, agents_watch=watch)
    if args.events:
        # what Flower shows: task events from this worker, "sent" for what it re-enqueues
        rt.celery.conf.update(worker_send_task_events=True, task_send_sent_event=True)
    # each pool process closes what it built (dispatcher, Redis connection) as it exits, and
    # nothing it inherited from this process (Runtime.close_forked)
    worker_process_shutdown.connect(lambda **_: rt.close_forked(), weak=False)
    upkeep = IndexUpkeep(
        rt.store.client,
        retention_seconds=rt.store.retention_seconds,
        session_retention_seconds=rt.store.session_retention_seconds,
    )
    sweeper = Sweeper(
        rt.store, rt.enqueue, interval=min(5.0, rt.store.lease / 3), upkeep=upkeep
    ).start()
    try:
        w = rt.celery.Worker(
            concurrency=args.concurrency,
            pool=args.pool,
            loglevel="INFO",
            without_heartbeat=not args.events,  # heartbeats tell Flower the worker is up
            # neither is used: no task is revoked, and deduplication is hookspawn's own;
            # mingle held each start a second waiting for the other workers' answers
            without_gossip=True,
            without_mingle=True,
        )
        w.start()
        return int(w.exitcode or 0)
    finally:
        sweeper.stop()
        watch.stop()
        rt.close()


def runner(args: argparse.Namespace) -> int:
    from workers.errors import WorkerError
    from workers.session.runner.service import run_runner

    settings = load_settings()
    _logging(settings)
    if args.concurrency < 1:
        raise CommandError(f"--concurrency {args.concurrency}: must be at least 1", exit_code=2)
    _quiet_celery_start()  # it runs as root by design: to run sessions as their own user
    try:
        return run_runner(settings, args.concurrency)
    except (ValueError, KeyError, WorkerError) as exc:
        raise CommandError(str(exc).strip("'\""), exit_code=2) from None
