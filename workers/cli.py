"""The `hookspawn` command line (SPEC §11)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from workers import commands

CONCURRENCY_HELP = "worker processes (default: twice the CPU cores, at least 2)"
OPEN_ADMIN_HELP = (
    "listen on a non-loopback --host without HOOKSPAWN_ADMIN_TOKEN (the admin API is then open "
    "to anyone who can reach it; a warning is logged)"
)


def default_concurrency() -> int:
    """Worker processes: twice the cores. A delivery's process mostly waits (on Redis, on
    GitHub for tokens, on the dispatch target), and with late acks and a prefetch of one each
    process holds one delivery, so one per core would leave cores idle between deliveries."""
    return max(2, 2 * (os.cpu_count() or 1))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hookspawn", description="GitHub webhooks in, agent sessions out."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, func: Callable[[argparse.Namespace], int], help_: str
    ) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_, description=help_)
        cmd.set_defaults(func=func)
        return cmd

    def server_url(cmd: argparse.ArgumentParser) -> None:
        cmd.add_argument(
            "--url", default=None, help="the running server (default http://127.0.0.1:8000)"
        )

    serve = add(
        "serve",
        commands.serve,
        "run web + worker (+ embedded Redis when HOOKSPAWN_REDIS_URL is unset)",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--concurrency", type=int, default=default_concurrency(), help=CONCURRENCY_HELP
    )
    serve.add_argument("--allow-open-admin", action="store_true", help=OPEN_ADMIN_HELP)

    web = add("web", commands.web, "run the HTTP server (intake and API)")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8000)
    web.add_argument("--access-log", action="store_true", help="log every request")
    web.add_argument("--allow-open-admin", action="store_true", help=OPEN_ADMIN_HELP)

    worker = add("worker", commands.worker, "run a Celery worker that processes deliveries")
    worker.add_argument(
        "--concurrency", type=int, default=default_concurrency(), help=CONCURRENCY_HELP
    )
    worker.add_argument("--pool", default="prefork", choices=["prefork", "threads", "solo"])
    worker.add_argument(
        "-E",
        "--events",
        action="store_true",
        help="send Celery task events and heartbeats (for Flower; off by default: they cost "
        "Redis round trips per task)",
    )

    check = add("check", commands.check, "compile the agent files and report every error")
    check.add_argument(
        "dir", nargs="?", default=None, help="the .auto directory (default $HOOKSPAWN_AGENTS_DIR)"
    )
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.add_argument("--strict", action="store_true", help="treat warnings as errors")
    check.add_argument(
        "--no-event-schemas",
        action="store_true",
        help="skip checking template and filter paths against GitHub's webhook schemas",
    )

    send = add("send", commands.send, "sign and post a webhook payload file to a running server")
    send.add_argument("file")
    send.add_argument("--event", required=True, help="the X-GitHub-Event name")
    send.add_argument("--delivery", default=None, help="X-GitHub-Delivery (default: a new UUID)")
    send.add_argument(
        "--secret", default=None, help="default: HOOKSPAWN_WEBHOOK_SECRET or the data dir's"
    )
    send.add_argument("--url", default=None, help="default http://127.0.0.1:8000/webhooks/github")

    deliveries = add(
        "deliveries",
        commands.deliveries,
        "show or replay recorded deliveries; recover the ones GitHub could not deliver",
    )
    deliveries.add_argument("action", choices=["list", "show", "replay", "recover"])
    deliveries.add_argument("id", nargs="?")
    server_url(deliveries)
    deliveries.add_argument(
        "--since",
        default="2h",
        help="recover: how far back to read GitHub's delivery log (90s, 15m, 2h, 3d; default 2h)",
    )
    deliveries.add_argument(
        "--apply",
        action="store_true",
        help="recover: request the redeliveries (without it, only print what would be done)",
    )
    deliveries.add_argument("--event", default=None, help="list: only this X-GitHub-Event")
    deliveries.add_argument("--status", default=None, choices=["queued", "processed", "failed"])
    deliveries.add_argument("--repository", default=None, help="list: only this owner/name")
    deliveries.add_argument("--limit", type=int, default=None, help="list: at most this many")

    explain = add(
        "explain",
        commands.explain,
        "dry run: what a webhook payload would trigger on a running server (changes nothing)",
    )
    explain.add_argument("file", help="the webhook body (JSON), as GitHub sends it")
    explain.add_argument("--event", required=True, help="the X-GitHub-Event name")
    explain.add_argument("--delivery", default=None, help="compute spawn ids for this delivery id")
    explain.add_argument("--json", action="store_true", help="print the JSON answer")
    server_url(explain)

    start = add("start", commands.start, "start a session of an agent by hand (no event)")
    start.add_argument("agent")
    start.add_argument("--title", default=None, help="displayTitle")
    start.add_argument("--prompt", default=None, help="initialPrompt")
    start.add_argument("--message", default=None)
    start.add_argument("--idempotency-key", default=None, help="starting twice with it starts once")
    server_url(start)

    sessions = add("sessions", commands.sessions, "list sessions")
    sessions.add_argument("action", choices=["list", "show"])
    sessions.add_argument("id", nargs="?")
    sessions.add_argument("--agent", default=None)
    sessions.add_argument("--limit", type=int, default=100)
    server_url(sessions)

    connections = add("connections", commands.connections, "list or sync GitHub App connections")
    connections.add_argument("action", choices=["list", "sync"])
    server_url(connections)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
