"""The `hookspawn` command line's parser: one function per verb adds its sub-parser (VERBS, in
the order `hookspawn --help` lists them); `parse` reads a command line with it."""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable
from typing import NoReturn

from hookspawn.cli.client import DEFAULT_URL
from hookspawn.cli.help import ActionHelp, Formatter
from workers.session.status import SessionStatus

__all__ = ["VERBS", "build_parser", "default_concurrency", "parse"]

#: what a verb runs: its parsed arguments → the exit status
Command = Callable[[argparse.Namespace], int]
#: adds one verb's sub-parser: (name, command, help) → the sub-parser, for its options
AddVerb = Callable[[str, Command, str], argparse.ArgumentParser]

#: sessions one `hookspawn runner` runs at once by default (workers.session.runner.service says why)
DEFAULT_CONCURRENCY = 2

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


BROKER_PORT_HELP = (
    "the port of the session broker's own listener on the same host: the sessions' broker "
    "routes only, the one address their sandboxes may reach (default: HOOKSPAWN_BROKER_PORT, "
    "else --port + 1)"
)
#: the most `hookspawn web --workers` starts: past a few per core they only compete
MAX_WEB_WORKERS = 64


def web_workers(value: str) -> int:
    """`--workers`: a whole number from 1 to MAX_WEB_WORKERS."""
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if not 1 <= count <= MAX_WEB_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{count} is not a number of processes from 1 to {MAX_WEB_WORKERS}"
        )
    return count


def _command(module: str, name: str) -> Command:
    """The command `name` of `hookspawn.cli.<module>`, imported when it runs: a verb loads only
    what it uses (`check` no HTTP client, no Redis)."""

    def run(args: argparse.Namespace) -> int:
        command: Command = getattr(importlib.import_module(f"hookspawn.cli.{module}"), name)
        return command(args)

    run.__qualname__ = run.__name__ = f"{module}.{name}"
    return run


class _Parser(argparse.ArgumentParser):
    """An argument error is one line (not the usage block), then exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: one sub-parser per verb, each made by its function in VERBS."""
    p = _Parser(prog="hookspawn", description="GitHub webhooks in, agent sessions out.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Command, help_: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(
            name, help=help_, description=help_, formatter_class=Formatter, add_help=False
        )
        cmd.add_argument("-h", "--help", action=ActionHelp)
        cmd.set_defaults(func=func)
        return cmd

    for verb in VERBS:
        verb(add)
    return p


def _server_url(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--url",
        default=None,
        help=f"the running server (default: HOOKSPAWN_URL, else {DEFAULT_URL})",
    )


def _as_json(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--json", action="store_true", help="print the JSON answer")


def _serve(add: AddVerb) -> None:
    serve = add(
        "serve",
        _command("process_commands", "serve"),
        "run web + worker + the session runner (embedded Redis when neither HOOKSPAWN_REDIS_URL "
        "nor HOOKSPAWN_REDIS_SENTINELS is set; no runner when HOOKSPAWN_DISPATCH_URL is set)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="the port to listen on")
    serve.add_argument("--broker-port", type=int, default=None, help=BROKER_PORT_HELP)
    serve.add_argument(
        "--concurrency", type=int, default=default_concurrency(), help=CONCURRENCY_HELP
    )
    serve.add_argument("--allow-open-admin", action="store_true", help=OPEN_ADMIN_HELP)
    serve.add_argument(
        "--demo",
        action="store_true",
        help="the example agents and a demo connection for their repository, on the embedded "
        "default (try `hookspawn send --example pull_request.opened`)",
    )


def _web(add: AddVerb) -> None:
    web = add("web", _command("process_commands", "web"), "run the HTTP server (intake and API)")
    web.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    web.add_argument("--port", type=int, default=8000, help="the port to listen on")
    web.add_argument("--broker-port", type=int, default=None, help=BROKER_PORT_HELP)
    web.add_argument("--access-log", action="store_true", help="log every request")
    web.add_argument(
        "--workers",
        type=web_workers,
        default=1,
        metavar="N",
        help=f"processes serving the port, under one supervising process (1 to {MAX_WEB_WORKERS}; "
        "default 1: one process, no supervisor)",
    )
    web.add_argument("--allow-open-admin", action="store_true", help=OPEN_ADMIN_HELP)


def _worker(add: AddVerb) -> None:
    worker = add(
        "worker",
        _command("process_commands", "worker"),
        "run a Celery worker that processes deliveries",
    )
    worker.add_argument(
        "--concurrency", type=int, default=default_concurrency(), help=CONCURRENCY_HELP
    )
    worker.add_argument(
        "--pool", default="prefork", choices=["prefork", "threads", "solo"], help="Celery's pool"
    )
    worker.add_argument(
        "-E",
        "--events",
        action="store_true",
        help="send Celery task events and heartbeats (for Flower; off by default: they cost "
        "Redis round trips per task)",
    )


def _runner(add: AddVerb) -> None:
    runner = add(
        "runner",
        _command("process_commands", "runner"),
        "run sessions on this machine (HOOKSPAWN_RUNNER=local): stage, set up, run the harness",
    )
    runner.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"sessions run at once (default {DEFAULT_CONCURRENCY})",
    )


def _check(add: AddVerb) -> None:
    check = add(
        "check",
        _command("check.command", "check"),
        "compile the agent files and report every error",
    )
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


def _init(add: AddVerb) -> None:
    init = add(
        "init",
        _command("starter_commands", "init"),
        "write a starter .auto directory (never overwrites)",
    )
    init.add_argument("dir", nargs="?", default=".auto", help="where (default .auto)")
    init.add_argument(
        "--repository",
        default="your-org/your-repo",
        help="owner/name the starter agents check out (default: a placeholder to edit)",
    )


def _schema(add: AddVerb) -> None:
    schema = add(
        "schema",
        _command("starter_commands", "schema"),
        "print the JSON Schema of an agent or fragment file as written (before imports merge)",
    )
    schema.add_argument(
        "kind", nargs="?", default="agent", choices=["agent", "fragment"], help="default agent"
    )
    schema.add_argument(
        "--write",
        default=None,
        metavar="DIR",
        help="instead of printing one: refresh both schemas in the .auto tree DIR "
        "(DIR/.schema/, where `init` puts them and its files' $schema lines point)",
    )


def _send(add: AddVerb) -> None:
    send = add(
        "send",
        _command("client_commands", "send"),
        "sign and post a webhook payload to a running server",
    )
    send.add_argument("file", nargs="?", default=None, help="the webhook body (JSON)")
    send.add_argument(
        "--example",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="send a sample payload shipped with hookspawn; without NAME, list them",
    )
    send.add_argument(
        "--event", default=None, help="the X-GitHub-Event name (with --example: from its name)"
    )
    send.add_argument("--delivery", default=None, help="X-GitHub-Delivery (default: a new UUID)")
    send.add_argument(
        "--secret", default=None, help="default: HOOKSPAWN_WEBHOOK_SECRET or the data dir's"
    )
    _server_url(send)


def _deliveries(add: AddVerb) -> None:
    deliveries = add(
        "deliveries",
        _command("client_commands", "deliveries"),
        "show or replay recorded deliveries; recover the ones GitHub could not deliver",
    )
    deliveries.add_argument("action", choices=["list", "show", "replay", "recover"])
    deliveries.add_argument("id", nargs="?", help="show, replay: the delivery")
    _server_url(deliveries)
    _as_json(deliveries)
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
    deliveries.add_argument(
        "--status",
        default=None,
        choices=["queued", "processed", "failed"],
        help="list: only deliveries with this status",
    )
    deliveries.add_argument("--repository", default=None, help="list: only this owner/name")
    deliveries.add_argument("--limit", type=int, default=None, help="list: at most this many")


def _explain(add: AddVerb) -> None:
    explain = add(
        "explain",
        _command("client_commands", "explain"),
        "dry run: what a webhook payload, or a recorded delivery, would trigger on a running "
        "server (changes nothing)",
    )
    explain.add_argument(
        "file",
        metavar="FILE|DELIVERY_ID",
        help="the webhook body (JSON) as GitHub sends it, with --event; or the id of a "
        "recorded delivery (its event and stored body)",
    )
    explain.add_argument("--event", default=None, help="with FILE: the X-GitHub-Event name")
    explain.add_argument("--delivery", default=None, help="compute spawn ids for this delivery id")
    _as_json(explain)
    _server_url(explain)


def _start(add: AddVerb) -> None:
    start = add(
        "start",
        _command("client_commands", "start"),
        "start a session of an agent by hand (no event)",
    )
    start.add_argument("agent", help="the agent's name")
    start.add_argument("--title", default=None, help="displayTitle")
    start.add_argument("--prompt", default=None, help="initialPrompt")
    start.add_argument("--message", default=None, help="the session's message")
    start.add_argument("--idempotency-key", default=None, help="starting twice with it starts once")
    _server_url(start)
    _as_json(start)


def _sessions(add: AddVerb) -> None:
    sessions = add(
        "sessions",
        _command("session_commands", "sessions"),
        "list sessions, show one, print its log or its harness's transcript, or cancel it",
    )
    sessions.add_argument("action", choices=["list", "show", "logs", "transcript", "cancel"])
    sessions.add_argument(
        "--follow", action="store_true", help="logs: keep printing until the session ends"
    )
    sessions.add_argument(
        "--raw",
        action="store_true",
        help="logs, transcript: print the bytes as they are (the log with its control "
        "sequences, the transcript's JSON events instead of its timeline)",
    )
    sessions.add_argument("id", nargs="?", help="show, logs, transcript, cancel: the session")
    sessions.add_argument("--agent", default=None, help="list: only this agent's sessions")
    sessions.add_argument(
        "--status",
        default=None,
        choices=[status.value for status in SessionStatus],
        help="list: only sessions a local runner runs, with this status now",
    )
    sessions.add_argument("--limit", type=int, default=100, help="list: at most this many")
    _server_url(sessions)
    _as_json(sessions)


def _connections(add: AddVerb) -> None:
    connections = add(
        "connections",
        _command("client_commands", "connections"),
        "list or sync GitHub App connections; add or remove a manual one (no App, for trying)",
    )
    connections.add_argument("action", choices=["list", "sync", "add", "remove"])
    connections.add_argument("repository", nargs="?", help="add, remove: OWNER/NAME")
    connections.add_argument(
        "--installation", type=int, default=None, help="add: the installation id it is under"
    )
    _server_url(connections)
    _as_json(connections)


def _github_app(add: AddVerb) -> None:
    app = add(
        "github-app",
        _command("github_app_commands", "github_app"),
        "the GitHub App the agents need: its manifest, its registration, webhook forwarding",
    )
    app.add_argument("action", choices=["manifest", "create", "forward-command"])
    app.add_argument(
        "dir", nargs="?", default=None, help="the .auto directory (default $HOOKSPAWN_AGENTS_DIR)"
    )
    app.add_argument(
        "--url",
        default=None,
        help="where this server is reached (default: HOOKSPAWN_PUBLIC_URL, else HOOKSPAWN_URL, "
        f"else {DEFAULT_URL})",
    )
    app.add_argument("--name", default=None, help="manifest, create: the App's name")
    app.add_argument("--org", default=None, help="manifest, create: register it for this org")
    app.add_argument("--repository", default=None, help="forward-command: only this OWNER/NAME")


def _sandbox(add: AddVerb) -> None:
    sandbox = add(
        "sandbox",
        _command("sandbox_commands", "sandbox"),
        "check the sandbox configuration, or migrate it from the legacy fields",
    )
    sandbox.add_argument("action", choices=["check", "migrate"])
    sandbox.add_argument(
        "config", nargs="?", default=None, help="the JSON file (default $HOOKSPAWN_SANDBOX_CONFIG)"
    )
    sandbox.add_argument(
        "--write", action="store_true", help="migrate: rewrite CONFIG (without it, only print)"
    )
    sandbox.add_argument(
        "--probe",
        action="store_true",
        help="check: also start the backend, running one confined command as "
        "HOOKSPAWN_RUNNER_USER (exit 1 naming why it cannot)",
    )


def _deploy(add: AddVerb) -> None:
    deploy = add(
        "deploy",
        _command("deploy_check", "deploy"),
        "check compose.yaml's environment before `docker compose up`: every missing, invalid "
        "or inconsistent variable at once, exit 1 when there is one",
    )
    deploy.add_argument("action", choices=["check"])
    deploy.add_argument(
        "--env-file",
        default=None,
        help="the env file compose reads (default: .env beside the compose file, if there)",
    )
    deploy.add_argument(
        "--profile",
        action="append",
        default=None,
        help="a profile `docker compose --profile` starts (again for more; COMPOSE_PROFILES "
        "adds its own)",
    )
    deploy.add_argument("-f", "--file", default="compose.yaml", help="the compose file")


def _doctor(add: AddVerb) -> None:
    add(
        "doctor",
        _command("doctor", "doctor"),
        "the programs hookspawn and its tests use (git, srt, bubblewrap, …): found, version, "
        "what for; exit 1 when one the runner needs is missing",
    )


#: the verbs in the order `hookspawn --help` lists them
VERBS: tuple[Callable[[AddVerb], None], ...] = (
    _serve,
    _web,
    _worker,
    _runner,
    _check,
    _init,
    _schema,
    _send,
    _deliveries,
    _explain,
    _start,
    _sessions,
    _connections,
    _github_app,
    _sandbox,
    _deploy,
    _doctor,
)


def parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """The arguments of `argv` and the parser of their verb.

    A verb's options go anywhere among its arguments (`sessions logs --follow ID` as well as
    `sessions logs ID --follow`): the verb's own parser reads them intermixed. Anything that
    does not start with a known verb (`--help`, a misspelt verb) is the top parser's to answer;
    so is a help request, which shows the help of the action named before it
    (`connections sync --help`)."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    verbs: dict[str, argparse.ArgumentParser] = sub.choices
    if not argv or argv[0] not in verbs or {"-h", "--help"} & set(argv):
        args = parser.parse_args(argv)
    else:
        args = verbs[argv[0]].parse_intermixed_args(argv[1:])
        args.command = argv[0]
    return args, verbs[args.command]
