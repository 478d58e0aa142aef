"""/ui's overview over real HTTP after real deliveries: the counts and charts show them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookspawn.web.ui import overview
from tests.conftest import wait_for
from tests.github_standin import GitHubStandin
from tests.hookspawn.web.ui.test_pages import page
from tests.workers.delivery.pipeline.conftest import (
    Hookspawn,
    connect,
    example,
    start_hookspawn,
)
from workers import keys

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


def section(text: str, name: str) -> str:
    found = re.search(rf'<section class="card" id="{name}">(.*?)</section>', text, re.S)
    assert found, f"no section {name} in the overview"
    return found.group(1)


def bars(markup: str) -> dict[str, str]:
    """Each bar chart's bars in this markup: label → value."""
    shown: dict[str, str] = {}
    for svg in re.findall(r"<svg .*?</svg>", markup, re.S):
        for rect in ET.fromstring(svg).iter(f"{SVG}rect"):
            if rect.get("data-label") is not None:
                shown[rect.get("data-label") or ""] = rect.get("data-value") or ""
    return shown


def deliveries_drawn(markup: str) -> int:
    total = 0
    for svg in re.findall(r'<svg [^>]*class="chart series".*?</svg>', markup, re.S):
        total += sum(int(r.get("data-value") or 0) for r in ET.fromstring(svg).iter(f"{SVG}rect"))
    return total


def test_overview_counts_what_was_delivered(hs: Hookspawn) -> None:
    empty = page(hs.client, "/ui")
    assert '<meta http-equiv="refresh" content="10">' in empty
    assert "no data" in section(empty, "latency")
    assert "Nothing failed" in section(empty, "failures")

    connect(hs)
    pr = hs.send("pull_request", hs.pr())
    view = hs.processed(pr)
    comment = hs.send("issue_comment", example(hs.webhooks, "issue_comment/created.payload.json"))
    hs.processed(comment)
    created = [o for o in view["outcomes"] if o["outcome"] == "dispatched"]
    assert created

    def flushed() -> bool:  # the worker flushes its metrics to Redis in the background
        return "no data" not in section(page(hs.client, "/ui"), "latency")

    wait_for(flushed, timeout=30)
    text = page(hs.client, "/ui")
    for window in ("deliveries-1", "deliveries-2"):
        shown = section(text, window)
        # the hour's and the day's columns hold them all (connecting sends one too)
        assert deliveries_drawn(shown) == len(hs.sent)
        assert bars(shown) == {"processed": str(len(hs.sent))}
    latency = section(text, "latency")
    assert re.search(r"<dt>p50</dt><dd>≤ [0-9.]+ s</dd>", latency)
    assert re.search(r"<dt>p99</dt><dd>≤ [0-9.]+ s</dd>", latency)
    outcomes = bars(section(text, "outcomes"))
    assert int(outcomes["dispatched"]) >= len(created)
    assert "refused: unresolvable_ref" in outcomes
    sessions = bars(section(text, "sessions"))
    assert int(sessions["recorded"]) >= len(created)  # no local runner: recorded, not run
    queues = section(text, "queues")
    assert "No local runner here" in queues
    # nothing of the delivery list's filters lands here: an old filtered link finds the list
    moved = hs.client.get("/ui", params={"event": "issue_comment"})
    assert moved.status_code == 303
    assert moved.headers["location"] == "/ui/deliveries?event=issue_comment"
    listing = page(hs.client, "/ui/deliveries", event="issue_comment")
    assert comment in listing
    assert pr not in listing


def test_overview_lists_failed_deliveries_with_links(hs: Hookspawn) -> None:
    connect(hs)
    delivery = hs.send("pull_request", hs.pr())
    hs.processed(delivery)
    # as a processing that gave up records it
    hs.rt.client.hset(keys.delivery(delivery), mapping={"status": "failed", "error": "<b>boom</b>"})
    failures = section(page(hs.client, "/ui"), "failures")
    assert f'href="/ui/deliveries/{delivery}"' in failures
    assert "&lt;b&gt;boom&lt;/b&gt;" in failures


def test_overview_counts_run_sessions_by_status_and_code(hs: Hookspawn) -> None:
    connect(hs)
    hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.client.post("/agents/nightly/sessions").status_code == 201
    ids = [s["id"] for s in hs.sessions()]
    assert len(ids) >= 3
    queued, failed, running = ids[:3]
    runs = hs.rt.runs
    for session_id in (queued, failed, running):
        runs.queue(session_id, workspace="/tmp/w", ttl=600)
    assert runs.claim(failed, "runner-1", 60)
    failure = {"code": "setup_failed", "message": "<i>setup</i> exited 1"}
    assert runs.advance(failed, "runner-1", "failed", failure)
    assert runs.claim(running, "runner-1", 60)
    assert runs.advance(running, "runner-1", "running")

    text = page(hs.client, "/ui")
    sessions = section(text, "sessions")
    counted = bars(sessions)
    assert counted["queued"] == "1"
    assert counted["failed"] == "1"
    assert counted["running"] == "1"
    assert counted["setup_failed"] == "1"
    queues = section(text, "queues")
    assert '<dd class="count" id="runner-queued">1</dd>' in queues
    assert '<dd class="count" id="runner-running">1</dd>' in queues
    failures = section(text, "failures")
    assert f'href="/ui/sessions/{failed}"' in failures
    assert "&lt;i&gt;setup&lt;/i&gt; exited 1" in failures


def test_overview_reads_a_bounded_number_of_deliveries(
    hs: Hookspawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    connect(hs)
    for _ in range(2):
        hs.processed(hs.send("pull_request", hs.pr()))
    monkeypatch.setattr(overview, "RECORDS_READ", 2)
    text = page(hs.client, "/ui")
    assert "counts from the newest 2 deliveries (more are kept" in " ".join(text.split())
    assert deliveries_drawn(section(text, "deliveries-1")) == 2 < len(hs.sent)
