"""The subcommands that talk to a running server, and `deliveries recover` (direct access).

`send`, `deliveries`, `start`, `sessions`, `connections` and `explain`; `deliveries recover`
reads the store and the App's delivery log itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hookspawn.cli.client import Server, error_line
from hookspawn.cli.settings import load_settings
from hookspawn.cli.summaries import (
    connections_text,
    deliveries_text,
    delivery_text,
    replay_text,
    session_text,
    sessions_text,
    sync_text,
)
from hookspawn.errors import CommandError
from triggers.signature import sign
from workers.settings import Settings


def server_of(args: argparse.Namespace) -> Server:
    settings = load_settings()
    return Server.at(args.url, env_url=settings.url, token=settings.admin_token)


def _print_json(answer: Any) -> None:
    print(json.dumps(answer, indent=2))


def _output(args: argparse.Namespace, answer: Any, readable: Callable[[Any], str]) -> None:
    """The answer as JSON with --json, else as the readable summary."""
    if args.json:
        _print_json(answer)
    else:
        sys.stdout.write(readable(answer))


def _secret(settings: Settings, given: str | None) -> str:
    if given:
        return given
    if settings.webhook_secret:
        return settings.webhook_secret[0]
    from workers.github.app_registration import data_dir_secret

    kept = data_dir_secret(settings.data_dir, create=False)
    if kept:
        return kept
    raise CommandError(
        "no webhook secret: pass --secret, set HOOKSPAWN_WEBHOOK_SECRET, or run from the "
        f"directory `hookspawn serve` runs in (it keeps one in {settings.data_dir})",
        exit_code=2,
    )


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}", exit_code=2) from None


def _payload_to_send(args: argparse.Namespace) -> tuple[str, bytes] | None:
    """(event, body) from FILE --event or --example; None when --example only asks the list."""
    from hookspawn.serve import samples

    if args.example is not None:
        if args.file is not None:
            raise CommandError("give either FILE or --example NAME, not both", exit_code=2)
        if args.example == "":
            return None
        try:
            path = samples.path_of(args.example)
        except samples.SampleNotFound as exc:
            raise CommandError(str(exc), exit_code=2) from None
        return args.event or samples.event_of(args.example), path.read_bytes()
    if args.file is None:
        raise CommandError("give a payload FILE (with --event) or --example NAME", exit_code=2)
    if not args.event:
        raise CommandError(f"{args.file}: --event NAME is required with a FILE", exit_code=2)
    return args.event, _read(args.file)


def send(args: argparse.Namespace) -> int:
    """Sign and post a payload: FILE --event NAME, or a sample with --example NAME."""
    from hookspawn.serve import samples

    chosen = _payload_to_send(args)
    if chosen is None:
        for name in samples.names():
            print(name)
        return 0
    event, body = chosen
    settings = load_settings()
    server = Server.at(args.url, env_url=settings.url, token=None)
    base = server.base.removesuffix("/webhooks/github")  # --url may be the webhook URL itself
    delivery = args.delivery or str(uuid.uuid4())
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(body, _secret(settings, args.secret)),
        "User-Agent": "GitHub-Hookshot/hookspawn-send",
    }
    response = Server(base).request("POST", "/webhooks/github", content=body, headers=headers)
    if not response.is_success:
        raise CommandError(error_line(response))
    try:
        status = response.json().get("status")
    except (ValueError, AttributeError):
        status = None
    print(
        f"{response.status_code} {status or 'accepted'}: delivery {delivery} ({event}); "
        f"follow it at {base}/ui/deliveries/{delivery}"
    )
    return 0


def deliveries(args: argparse.Namespace) -> int:
    if args.action == "recover":
        return recover(args)
    server = server_of(args)
    if args.action == "list":
        filters = {
            "event": args.event,
            "status": args.status,
            "repository": args.repository,
            "limit": args.limit,
        }
        answer = server.json("GET", "/deliveries", params=filters)
        _output(args, answer, deliveries_text)
        return 0
    if not args.id:
        raise CommandError(f"{args.action}: a delivery ID is required", exit_code=2)
    if args.action == "show":
        answer = server.json("GET", f"/deliveries/{quote(args.id, safe='')}")
        _output(args, answer, delivery_text)
        return 0
    answer = server.json("POST", f"/deliveries/{quote(args.id, safe='')}/replay")
    _output(args, answer, lambda a: replay_text(a, f"{server.base}/ui/deliveries/{args.id}"))
    return 0


def start(args: argparse.Namespace) -> int:
    body = {
        "displayTitle": args.title,
        "initialPrompt": args.prompt,
        "message": args.message,
        "requester": os.environ.get("USER"),
    }
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else None
    answer = server_of(args).json(
        "POST",
        f"/agents/{quote(args.agent, safe='')}/sessions",
        body={k: v for k, v in body.items() if v is not None},
        headers=headers,
    )
    _output(args, answer, session_text)
    return 0


def sessions(args: argparse.Namespace) -> int:
    server = server_of(args)
    if args.action == "show":
        if not args.id:
            raise CommandError("show: a session ID is required", exit_code=2)
        answer = server.json("GET", f"/sessions/{quote(args.id, safe='')}")
        _output(args, answer, session_text)
        return 0
    params = {"agent": args.agent, "status": args.status, "limit": args.limit}
    answer = server.json("GET", "/sessions", params=params)
    _output(args, answer, sessions_text)
    return 0


def connections(args: argparse.Namespace) -> int:
    if args.action in ("add", "remove"):
        return _manual_connection(args)
    if args.repository is not None or args.installation is not None:
        raise CommandError(f"connections {args.action} takes no repository", exit_code=2)
    server = server_of(args)
    if args.action == "sync":
        _output(args, server.json("POST", "/connections/sync"), sync_text)
    else:
        _output(args, server.json("GET", "/connections"), connections_text)
    return 0


def _manual_connection(args: argparse.Namespace) -> int:
    """`connections add OWNER/NAME [--installation ID]`, `connections remove OWNER/NAME`."""
    owner, slash, name = (args.repository or "").partition("/")
    if not owner or not slash or not name or "/" in name:
        raise CommandError(
            f"connections {args.action}: give the repository as OWNER/NAME", exit_code=2
        )
    if args.action == "remove" and args.installation is not None:
        raise CommandError("connections remove takes no --installation", exit_code=2)
    server = server_of(args)
    if args.action == "add":
        body: dict[str, Any] = {"repository": args.repository}
        if args.installation is not None:
            body["installationId"] = args.installation
        answer = server.json("POST", "/connections", body=body)
    else:
        answer = server.json(
            "DELETE", f"/connections/{quote(owner, safe='')}/{quote(name, safe='')}"
        )
    if args.json:
        _print_json(answer)
    elif args.action == "add":
        print(
            f"{args.repository} is covered by a manual connection: spawns for it proceed, "
            "and no GitHub token is minted for it (install the GitHub App for that)"
        )
    else:
        print(f"{args.repository} is no longer covered by a manual connection")
    return 0


def recover(args: argparse.Namespace) -> int:
    """`deliveries recover`: direct access (HOOKSPAWN_REDIS_URL and the App's credentials)."""
    from workers.delivery.recover import recover as run
    from workers.delivery.recover import write_report
    from workers.errors import WorkerError
    from workers.github.client import GitHubApp
    from workers.redis_connection import redis_client
    from workers.settings import parse_duration

    try:
        since = parse_duration(args.since)
    except ValueError as exc:
        raise SystemExit(f"hookspawn deliveries recover: --since: {exc}") from None
    settings = load_settings()
    target = settings.redis_target
    if target is None:
        raise SystemExit(
            "hookspawn deliveries recover: set HOOKSPAWN_REDIS_URL to the delivery store's Redis "
            "(or HOOKSPAWN_REDIS_SENTINELS and HOOKSPAWN_REDIS_SENTINEL_MASTER)"
        )
    try:
        app = GitHubApp.from_settings(settings)
    except WorkerError as exc:
        raise SystemExit(f"hookspawn deliveries recover: {exc.message}") from None
    if app is None:
        raise SystemExit(
            "hookspawn deliveries recover: set HOOKSPAWN_GITHUB_APP_ID and "
            "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH (the App's delivery log needs its credentials)"
        )
    client = redis_client(target)
    try:
        report = run(app, client, since=since, retention=settings.retention, apply=bool(args.apply))
    except WorkerError as exc:
        print(f"hookspawn deliveries recover: {exc.message}", file=sys.stderr)
        return 2
    finally:
        client.close()
    return write_report(report, retention=settings.retention, out=sys.stdout)


def explain(args: argparse.Namespace) -> int:
    """`explain FILE --event NAME` or `explain DELIVERY_ID`: POST /explain on the running
    server and print its answer. An argument that is no file but a delivery id's shape is a
    recorded delivery, explained from its stored event and body."""
    from workers.delivery.explain import DELIVERY_RE, format_explain

    body: dict[str, Any]
    if not Path(args.file).exists() and DELIVERY_RE.fullmatch(args.file):
        if args.event or args.delivery:
            raise CommandError(
                f"explain {args.file}: a recorded delivery brings its own event and id "
                "(--event and --delivery go with a FILE)",
                exit_code=2,
            )
        body = {"deliveryId": args.file}
    else:
        if not args.event:
            raise CommandError(
                f"explain {args.file}: --event NAME is required with a payload file "
                "(or give a recorded delivery's id)",
                exit_code=2,
            )
        try:
            payload = json.loads(Path(args.file).read_bytes())
        except OSError as exc:
            raise CommandError(f"cannot read {args.file}: {exc.strerror}", exit_code=2) from None
        except ValueError as exc:
            raise CommandError(f"{args.file} is not JSON: {exc}", exit_code=2) from None
        body = {"event": args.event, "payload": payload}
        if args.delivery:
            body["deliveryId"] = args.delivery
    answer = server_of(args).json("POST", "/explain", body=body)
    if args.json:
        _print_json(answer)
    else:
        sys.stdout.write(format_explain(answer))
    return 0
