"""What each `hookspawn` subcommand does; the argument parsing lives in workers.cli."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from triggers.signature import sign
from workers.serve import data_dir_secret
from workers.settings import Settings

DEFAULT_URL = "http://127.0.0.1:8000"


def _settings() -> Settings:
    return Settings()


def _logging() -> None:
    # A worker logs a line per delivery; neither this format nor Celery's own read the
    # thread, the pid or the caller's file and line, so they are not collected (the switches
    # the `logging` docs list under "Optimization"). %(processName)s stays: Celery's uses it.
    logging.logThreads = False
    logging.logProcesses = False
    logging._srcfile = None
    logging.basicConfig(
        level=os.environ.get("HOOKSPAWN_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def serve(args: argparse.Namespace) -> int:
    from workers.serve import serve as run

    return run(_settings(), host=args.host, port=args.port, concurrency=args.concurrency)


def web(args: argparse.Namespace) -> int:
    from triggers.api import create_app
    from triggers.http_server import serve_web
    from workers.runtime import build_runtime

    _logging()
    rt = build_runtime(_settings())
    serve_web(
        create_app(rt), rt.settings, host=args.host, port=args.port, access_log=args.access_log
    )
    return 0


def worker(args: argparse.Namespace) -> int:
    from workers.agents_source import ChangeWatch
    from workers.runtime import build_runtime
    from workers.sweep import Sweeper

    _logging()
    # two INFO lines per task (received, succeeded) cost CPU at load and say less than the
    # delivery record does; HOOKSPAWN_LOG_LEVEL=DEBUG brings them back
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in ("celery.app.trace", "celery.worker.strategy"):
            logging.getLogger(name).setLevel(logging.WARNING)
    settings = _settings()
    # one scan of the agent files a second for the whole worker, not one per pool process:
    # started before the pool is forked, which then reads its change count
    watch = ChangeWatch(settings.agents_dir).start()
    rt = build_runtime(settings, agents_watch=watch)
    sweeper = Sweeper(rt.store, rt.enqueue, interval=min(5.0, rt.store.lease / 3)).start()
    try:
        w = rt.celery.Worker(
            concurrency=args.concurrency, pool=args.pool, loglevel="INFO", without_heartbeat=True
        )
        w.start()
        return int(w.exitcode or 0)
    finally:
        sweeper.stop()
        watch.stop()


def check(args: argparse.Namespace) -> int:
    from agents.report import ExtraCheck, run_check

    settings = _settings()
    auto_dir = Path(args.dir) if args.dir else settings.agents_dir
    extra: list[ExtraCheck] = []
    if not getattr(args, "no_event_schemas", False):
        from workers.event_schemas import check_event_paths

        extra.append(check_event_paths)
    return run_check(
        auto_dir,
        as_json=args.json,
        secret_names=settings.secret_names,
        out=sys.stdout,
        extra_checks=extra,
        strict=bool(getattr(args, "strict", False)),
    )


def _secret(settings: Settings, given: str | None) -> str:
    if given:
        return given
    if settings.webhook_secret:
        return settings.webhook_secret[0]
    kept = data_dir_secret(settings.data_dir, create=False)
    if kept:
        return kept
    raise SystemExit("hookspawn send: no secret: pass --secret or set HOOKSPAWN_WEBHOOK_SECRET")


def send(args: argparse.Namespace) -> int:
    settings = _settings()
    body = Path(args.file).read_bytes()
    delivery = args.delivery or str(uuid.uuid4())
    url = args.url or f"{DEFAULT_URL}/webhooks/github"
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": args.event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(body, _secret(settings, args.secret)),
        "User-Agent": "GitHub-Hookshot/hookspawn-send",
    }
    response = httpx.post(url, content=body, headers=headers, timeout=30)
    print(f"{response.status_code} {response.text}")
    return 0 if response.is_success else 1


def _admin(settings: Settings) -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.admin_token}"} if settings.admin_token else {}


def api_call(
    method: str,
    path: str,
    *,
    url: str | None,
    body: Any = None,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> int:
    """Call the running server's API and print the JSON answer; exit 0 on 2xx."""
    settings = _settings()
    base = (url or DEFAULT_URL).rstrip("/")
    try:
        response = httpx.request(
            method,
            base + path,
            json=body,
            params={k: v for k, v in (params or {}).items() if v is not None},
            headers={**_admin(settings), **(headers or {})},
            timeout=120,
        )
    except httpx.HTTPError as exc:
        print(f"hookspawn: cannot reach {base}: {exc}", file=sys.stderr)
        return 2
    try:
        print(json.dumps(response.json(), indent=2))
    except ValueError:
        print(response.text)
    return 0 if response.is_success else 1


def deliveries(args: argparse.Namespace) -> int:
    if args.action == "recover":
        return recover(args)
    if args.action == "list":
        filters = {
            "event": args.event,
            "status": args.status,
            "repository": args.repository,
            "limit": args.limit,
        }
        return api_call("GET", "/deliveries", url=args.url, params=filters)
    if not args.id:
        raise SystemExit(f"hookspawn deliveries {args.action}: a delivery ID is required")
    if args.action == "show":
        return api_call("GET", f"/deliveries/{args.id}", url=args.url)
    return api_call("POST", f"/deliveries/{args.id}/replay", url=args.url)


def start(args: argparse.Namespace) -> int:
    body = {
        "displayTitle": args.title,
        "initialPrompt": args.prompt,
        "message": args.message,
        "requester": os.environ.get("USER"),
    }
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else None
    return api_call(
        "POST",
        f"/agents/{args.agent}/sessions",
        url=args.url,
        body={k: v for k, v in body.items() if v is not None},
        headers=headers,
    )


def sessions(args: argparse.Namespace) -> int:
    if args.action == "show":
        if not args.id:
            raise SystemExit("hookspawn sessions show: a session ID is required")
        return api_call("GET", f"/sessions/{args.id}", url=args.url)
    return api_call(
        "GET", "/sessions", url=args.url, params={"agent": args.agent, "limit": args.limit}
    )


def connections(args: argparse.Namespace) -> int:
    if args.action == "sync":
        return api_call("POST", "/connections/sync", url=args.url)
    return api_call("GET", "/connections", url=args.url)


def recover(args: argparse.Namespace) -> int:
    """`deliveries recover`: direct access (HOOKSPAWN_REDIS_URL and the App's credentials)."""
    from workers.errors import WorkerError
    from workers.github import GitHubApp
    from workers.recover import recover as run
    from workers.recover import write_report
    from workers.runtime import redis_client
    from workers.settings import parse_duration

    try:
        since = parse_duration(args.since)
    except ValueError as exc:
        raise SystemExit(f"hookspawn deliveries recover: --since: {exc}") from None
    settings = _settings()
    if not settings.redis_url:
        raise SystemExit(
            "hookspawn deliveries recover: set HOOKSPAWN_REDIS_URL to the delivery store's Redis"
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
    client = redis_client(settings.redis_url)
    try:
        report = run(app, client, since=since, retention=settings.retention, apply=bool(args.apply))
    except WorkerError as exc:
        print(f"hookspawn deliveries recover: {exc.message}", file=sys.stderr)
        return 2
    finally:
        client.close()
    return write_report(report, retention=settings.retention, out=sys.stdout)


def explain(args: argparse.Namespace) -> int:
    """`explain FILE --event NAME`: POST /explain on the running server and print its answer."""
    from workers.explain import format_explain

    try:
        payload = json.loads(Path(args.file).read_bytes())
    except OSError as exc:
        raise SystemExit(f"hookspawn explain: cannot read {args.file}: {exc.strerror}") from None
    except ValueError as exc:
        raise SystemExit(f"hookspawn explain: {args.file} is not JSON: {exc}") from None
    body: dict[str, Any] = {"event": args.event, "payload": payload}
    if args.delivery:
        body["deliveryId"] = args.delivery
    settings = _settings()
    base = (args.url or DEFAULT_URL).rstrip("/")
    try:
        response = httpx.post(base + "/explain", json=body, headers=_admin(settings), timeout=120)
    except httpx.HTTPError as exc:
        print(f"hookspawn: cannot reach {base}: {exc}", file=sys.stderr)
        return 2
    try:
        answer = response.json()
    except ValueError:
        print(response.text)
        return 1
    if args.json or not response.is_success:
        print(json.dumps(answer, indent=2))
    else:
        sys.stdout.write(format_explain(answer))
    return 0 if response.is_success else 1
