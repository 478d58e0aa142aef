"""The CLI against a running server: start, sessions, deliveries (with filters), connections."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from hookspawn.cli import main
from tests.workers.delivery.pipeline.conftest import INSTALLATION, REPO, Hookspawn


def cli(hs: Hookspawn, *args: str) -> tuple[int, Any]:
    """`hookspawn ARGS --url <server>` run in this process (`cli.main`): what is tested is
    the commands' talk with the server, not the interpreter starting."""
    url = str(hs.client.base_url).rstrip("/")
    as_json = ["--json"] if args[0] in ("deliveries", "sessions", "start", "connections") else []
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([*args, "--url", url, *as_json])
    try:
        return code, json.loads(out.getvalue())
    except ValueError:
        return code, out.getvalue() + err.getvalue()


def test_cli_round_trip(connected: Hookspawn) -> None:
    hs = connected
    pr = hs.send("pull_request", hs.pr(), delivery="cli-pr")
    hs.processed(pr)

    code, listed = cli(hs, "deliveries", "list", "--event", "pull_request", "--limit", "5")
    assert code == 0
    assert [d["deliveryId"] for d in listed["items"]] == ["cli-pr"]
    code, listed = cli(hs, "deliveries", "list", "--event", "installation")
    assert code == 0
    assert {d["event"] for d in listed["items"]} == {"installation"}
    code, listed = cli(hs, "deliveries", "list", "--repository", REPO.lower())
    assert [d["deliveryId"] for d in listed["items"]] == ["cli-pr"]

    code, shown = cli(hs, "deliveries", "show", "cli-pr")
    assert code == 0
    assert shown["status"] == "processed"

    code, started = cli(hs, "start", "nightly", "--title", "by hand", "--idempotency-key", "k1")
    assert code == 0
    assert started["displayTitle"] == "by hand"
    code, refused = cli(hs, "start", "pr-review")
    assert code == 1
    assert refused.startswith(
        "hookspawn start: POST /agents/pr-review/sessions: 409 event_required: "
    )

    code, sessions = cli(hs, "sessions", "list", "--agent", "nightly")
    assert code == 0
    assert [s["id"] for s in sessions["items"]] == [started["id"]]

    code, connections = cli(hs, "connections", "list")
    assert code == 0
    assert [c["id"] for c in connections["items"]] == [INSTALLATION]

    code, synced = cli(hs, "connections", "sync")
    assert code == 0, synced
    code, replayed = cli(hs, "deliveries", "replay", "cli-pr")
    assert code == 0
    assert replayed["status"] == "queued"


def test_worker_processes_default_to_twice_the_cores(monkeypatch: Any) -> None:
    import os

    from hookspawn.cli.parser import build_parser

    for cores, expected in ((1, 2), (2, 4), (None, 2), (8, 16)):
        monkeypatch.setattr(os, "cpu_count", lambda cores=cores: cores)
        parser = build_parser()
        assert parser.parse_args(["worker"]).concurrency == expected
        assert parser.parse_args(["serve"]).concurrency == expected
        assert parser.parse_args(["worker", "--concurrency", "3"]).concurrency == 3
