"""The subcommands that run a process or work locally, and the Settings every subcommand reads.

`serve`, `web`, `worker`, `check` and `init`; the ones that talk to a running server are in
hookspawn.client_commands, the argument parsing in hookspawn.cli.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hookspawn.agents_notice import log_agents
from hookspawn.client import CommandError
from hookspawn.start_checks import broker_port, require_port, require_redis, settings_message
from triggers.session.harness import PROGRAMS
from workers.secret_files import SecretFileError
from workers.settings import Settings

log = logging.getLogger("hookspawn")


def load_settings() -> Settings:
    """The environment's settings, with the GitHub App `github-app create` kept in the data
    directory for what the environment leaves unset."""
    from workers.github.app_registration import with_registered_app

    try:
        return with_registered_app(Settings())
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "HOOKSPAWN_" + "_".join(str(part) for part in first["loc"]).upper()
        raise CommandError(f"{name}: {settings_message(first['msg'])}", exit_code=2) from None
    except SecretFileError as exc:
        raise CommandError(exc.message, exit_code=2) from None


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


def serve(args: argparse.Namespace) -> int:
    from hookspawn.demo import demo_settings
    from hookspawn.exposure import open_admin_refusal
    from hookspawn.serve import serve as run

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
    from hookspawn.web.http_server import serve_web
    from workers.runtime import build_runtime

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
    _logging(settings)
    warning = open_admin_warning(args.host, args.port, token=token)
    if warning:
        logging.getLogger("hookspawn.web").warning("%s", warning)
    if not settings.webhook_secret:
        logging.getLogger("hookspawn.web").warning(
            "no HOOKSPAWN_WEBHOOK_SECRET: every delivery is refused (401) until it is set to "
            "the GitHub App's webhook secret"
        )
    log_agents(log, settings.agents_dir, settings.secret_names)
    if args.workers > 1:
        from hookspawn.web.processes import serve_processes

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
    # one scan of the agent files a second for the whole worker, not one per pool process:
    # started before the pool is forked, which then reads its change count
    watch = ChangeWatch(settings.agents_dir).start()
    rt = build_runtime(settings, agents_watch=watch)
    if args.events:
        # what Flower shows: task events from this worker, "sent" for what it re-enqueues
        rt.celery.conf.update(worker_send_task_events=True, task_send_sent_event=True)
    # each pool process closes what it built (dispatcher, Redis connection) as it exits
    worker_process_shutdown.connect(lambda **_: rt.close(), weak=False)
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
        )
        w.start()
        return int(w.exitcode or 0)
    finally:
        sweeper.stop()
        watch.stop()
        rt.close()


def check(args: argparse.Namespace) -> int:
    from agents.report import ExtraCheck, run_check

    settings = load_settings()
    auto_dir = Path(args.dir) if args.dir else settings.agents_dir
    extra: list[ExtraCheck] = []
    if not getattr(args, "no_event_schemas", False):
        from hookspawn.schema_check.event_checks import check_event_paths

        extra.append(check_event_paths)
    from hookspawn.schema_check.agent_lines import Locator

    harnesses: dict[str, list[str]] = {}

    def note_harnesses(result: Any, _: Path) -> list[Any]:
        for agent in result.agents:
            harnesses.setdefault(agent.harness, []).append(agent.name)
        return []  # what this machine lacks is said apart: the files are not at fault

    code = run_check(
        auto_dir,
        as_json=args.json,
        secret_names=settings.secret_names,
        out=sys.stdout,
        extra_checks=[*extra, note_harnesses],
        strict=bool(getattr(args, "strict", False)),
        unmounted=settings.unmounted_capabilities,
        locate=Locator(auto_dir).where,
    )
    # the JSON answer is about the files alone, and so is a run that found them at fault
    if not args.json and code == 0:
        for line in harness_warnings(settings, harnesses):
            print(f"hookspawn check: warning: {line}", file=sys.stderr)
    return code


def harness_warnings(settings: Settings, harnesses: Mapping[str, Sequence[str]]) -> list[str]:
    """For each harness the agents name that could not run on this machine (its program not
    on the session PATH, its model key unset), which agents it leaves without one."""
    from workers.session.runner.harness import unavailable
    from workers.session.runner.run import SESSION_PATH

    if settings.harness_command:
        return []  # HOOKSPAWN_HARNESS_COMMAND runs for every agent
    lines = []
    for harness, names in sorted(harnesses.items()):
        if harness not in PROGRAMS:
            continue
        problem = unavailable(harness, shutil.which(PROGRAMS[harness], path=SESSION_PATH), settings)
        if problem is not None:
            lines.append(
                f"harness {harness} of {', '.join(sorted(names))} cannot run on this machine: "
                f"{problem}"
            )
    return lines


def init(args: argparse.Namespace) -> int:
    from hookspawn.starter import AlreadyThere, write_starter

    directory = Path(args.dir)
    try:
        written = write_starter(directory, repository=args.repository)
    except AlreadyThere as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    for path in written:
        print(f"wrote {path}")
    print(f"check them with `hookspawn check --strict {directory}`", end="")
    if args.repository == "your-org/your-repo":
        print("; then put your repository in place of your-org/your-repo", end="")
    print()
    return 0
