"""The failure lane on a real Celery worker: a poison delivery (too deep a body, a bug in the
pipeline) ends `failed` at once, is a dead letter in the API and the metrics, and replays
cleanly once the cause is gone; attempts are counted durably and bounded."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from hookspawn.web.api import create_app
from tests.conftest import make_settings, running_worker, wait_for, webhook_headers
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from tests.workers.delivery.pipeline.conftest import AGENTS, Hookspawn, connect, write_agents
from triggers.json_codec import MAX_DEPTH
from workers import keys
from workers.delivery.processing import Pipeline, RunResult
from workers.delivery.record import Delivery, NewDelivery
from workers.delivery.sweep import Sweeper
from workers.errors import GitHubUnavailable
from workers.runtime import build_pipeline, build_runtime


def nested(depth: int) -> bytes:
    """`{"a_b": {"a_b": … 1 …}}`, `depth` objects deep, written out (no recursive encoder)."""
    return b'{"a_b":' * depth + b"1" + b"}" * depth


def pr_with(hs: Hookspawn, depth: int) -> bytes:
    """The example pull_request body with a member `depth` objects deep (the body itself is
    one level more)."""
    raw = json.dumps(hs.pr()).encode()
    return raw[:-1] + b',"deep_thing":' + nested(depth) + b"}"


def post_raw(hs: Hookspawn, raw: bytes, delivery: str) -> httpx.Response:
    return hs.client.post(
        "/webhooks/github",
        content=raw,
        headers=webhook_headers(raw, "pull_request", delivery),
    )


def metric(client: httpx.Client, line_start: str) -> float:
    """The value of the first /metrics sample whose line starts with `line_start`."""
    text = client.get("/metrics").text
    found = [line for line in text.splitlines() if line.startswith(line_start)]
    assert found, f"no sample {line_start!r} in /metrics"
    return float(found[0].rsplit(" ", 1)[1])


def failed_ids(client: httpx.Client) -> set[str]:
    items = client.get("/deliveries", params={"status": "failed"}).json()["items"]
    return {item["deliveryId"] for item in items}


def test_intake_refuses_bodies_deeper_than_the_worker_reads(connected: Hookspawn) -> None:
    hs = connected
    answer = post_raw(hs, pr_with(hs, 989), "deep-990")
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_body"
    assert f"nested deeper than {MAX_DEPTH} levels" in error["message"]
    assert hs.rt.store.get("deep-990") is None

    # the deepest body intake accepts is processed like any other, and its page renders
    assert post_raw(hs, pr_with(hs, MAX_DEPTH - 1), "deep-max").status_code == 202
    view = hs.processed("deep-max")
    assert view["status"] == "processed", view
    assert {o["agent"] for o in view["outcomes"] if o["outcome"] == "dispatched"} == {
        "pr-review",
        "head-branch",
    }
    page = hs.client.get("/ui/deliveries/deep-max")
    assert page.status_code == 200
    assert "deep_thing" in page.text


def test_a_body_too_deep_for_the_worker_is_a_dead_letter(connected: Hookspawn) -> None:
    hs = connected
    dead_before = metric(hs.client, "hookspawn_dead_letters ")
    # recorded before intake limited the depth (a store written by an older version)
    for delivery, depth in (("poison-990", 989), ("poison-300", 299)):
        body = pr_with(hs, depth)
        hs.rt.store.record(NewDelivery(delivery, "pull_request", "opened", None, None, None, body))
        hs.rt.enqueue(delivery)
    for delivery in ("poison-990", "poison-300"):
        view = hs.processed(delivery)
        assert view["status"] == "failed", view
        assert view["error"].startswith("internal_error: TooDeep: JSON nested deeper than"), view
        assert view["runs"][-1]["error"] == "internal_error"
        record = hs.rt.store.get(delivery)
        assert record is not None and record.attempts == 1  # never retried
        assert not hs.rt.store.is_pending(delivery)
        # the explorer shows it, as it was received
        page = hs.client.get(f"/ui/deliveries/{delivery}")
        assert page.status_code == 200, page.text
        assert "deep_thing" in page.text
    assert {"poison-990", "poison-300"} <= failed_ids(hs.client)
    wait_for(lambda: metric(hs.client, "hookspawn_dead_letters ") == dead_before + 2)
    assert (
        metric(
            hs.client,
            'hookspawn_deliveries_processed_total{event="pull_request",status="failed"}',
        )
        >= 2
    )


class Breakable:
    """The real spawn pipeline behind a hook that raises (a bug) while `broken` is set."""

    def __init__(self, inner: Pipeline, broken: threading.Event) -> None:
        self.inner = inner
        self.broken = broken

    def run(
        self,
        delivery: Delivery,
        body: Mapping[str, Any],
        envelope: dict[str, Any],
        *,
        final_attempt: bool,
    ) -> RunResult:
        if self.broken.is_set():
            raise KeyError("a bug in a hook")
        return self.inner.run(delivery, body, envelope, final_attempt=final_attempt)

    def dispatch_staged(self, result: RunResult) -> int:
        return self.inner.dispatch_staged(result)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def breakable(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[tuple[Hookspawn, threading.Event]]:
    key = tmp_path / "app.pem"
    key.write_text(github.private_key_pem)
    auto = write_agents(tmp_path, AGENTS)
    settings = make_settings(
        redis_url=redis_url,
        data_dir=tmp_path / "data",
        agents_dir=auto,
        github_app_id=github.app_id,
        github_private_key_path=key,
        github_api_url=github.url,
        max_retries=3,
    )
    broken = threading.Event()

    def pipeline(client: redis.Redis) -> Pipeline:
        return Breakable(build_pipeline(settings, client), broken)

    rt = build_runtime(settings, pipeline=pipeline)
    with running_worker(rt), live_client(create_app(rt)) as client:
        yield Hookspawn(rt, client, github, webhooks_dir, auto), broken
    rt.close()


def test_a_bug_fails_the_delivery_at_once_and_replay_completes_it(
    breakable: tuple[Hookspawn, threading.Event], caplog: pytest.LogCaptureFixture
) -> None:
    hs, broken = breakable
    connect(hs)
    broken.set()
    with caplog.at_level(logging.ERROR, logger="workers.delivery.processing"):
        delivery = hs.send("pull_request", hs.pr())
        view = hs.processed(delivery)
    assert view["status"] == "failed", view
    assert view["error"] == "internal_error: KeyError: 'a bug in a hook'"
    assert view["attempts"] == 1
    logged = [r for r in caplog.records if r.getMessage().startswith(f"delivery {delivery} ")]
    assert len(logged) == 1
    assert logged[0].exc_info is not None and logged[0].exc_info[0] is KeyError  # traceback
    record = hs.rt.store.get(delivery)
    assert record is not None and record.attempts == 1
    assert delivery in failed_ids(hs.client)
    assert hs.rt.client.zscore(keys.DEAD, delivery) is not None
    assert not hs.sessions()

    broken.clear()  # the fix is deployed
    assert hs.client.post(f"/deliveries/{delivery}/replay").status_code == 202
    view = hs.processed(delivery, runs=2)
    assert view["status"] == "processed", view
    assert view["error"] is None
    assert [run["status"] for run in view["runs"]] == ["failed", "processed"]
    dispatched = {o["agent"] for o in view["outcomes"] if o["outcome"] == "dispatched"}
    assert dispatched == {"pr-review", "head-branch"}
    assert hs.rt.client.zscore(keys.DEAD, delivery) is None
    assert delivery not in failed_ids(hs.client)
    record = hs.rt.store.get(delivery)
    assert record is not None and record.attempts == 1  # counted again from the replay


class AlwaysDown:
    """A pipeline whose every run meets a GitHub outage."""

    def __init__(self) -> None:
        self.runs = 0

    def run(
        self,
        delivery: Delivery,
        body: Mapping[str, Any],
        envelope: dict[str, Any],
        *,
        final_attempt: bool,
    ) -> RunResult:
        self.runs += 1
        raise GitHubUnavailable("GitHub is down", retry_after=0.1)

    def dispatch_staged(self, result: RunResult) -> int:
        raise AssertionError("this pipeline stages no sessions")

    def close(self) -> None:
        """Holds nothing."""


def test_attempts_count_across_dead_workers_sweeps_and_retries(
    redis_url: str, tmp_path: Path
) -> None:
    down = AlwaysDown()
    settings = make_settings(redis_url=redis_url, data_dir=tmp_path, max_retries=2, lease_seconds=1)
    rt = build_runtime(settings, pipeline=down)
    store = rt.store
    assert store.max_attempts == 3
    enqueued: list[str] = []
    sweeper = Sweeper(store, enqueued.append)
    try:
        store.record(NewDelivery("a-1", "push", None, "o/r", None, None, b"{}"))
        # two workers claim it and die before finishing (nothing released, nothing recorded)
        for owner in ("dead-1", "dead-2"):
            state, delivery, _ = store.claim("a-1", owner)
            assert state == "claimed" and delivery is not None
            rt.client.delete(keys.delivery_lock("a-1"))  # its lock expired with it
            rt.client.zadd(keys.PENDING, {"a-1": time.time() - 1})  # so did its lease
            assert sweeper.sweep_once() == ["a-1"]
        assert enqueued == ["a-1", "a-1"]
        # the third attempt, on a real worker, is the final one: failed, never retried
        with running_worker(rt):
            rt.enqueue("a-1")
            wait_for(lambda: (d := store.get("a-1")) is not None and d.status == "failed")
        assert down.runs == 1
        record = store.get("a-1")
        assert record is not None and record.attempts == 3
        assert record.error == "github_unavailable: GitHub is down"
        assert not store.is_pending("a-1")

        # out of attempts while pending (its final attempt's worker died): the sweep fails it
        # for good instead of enqueuing it again
        store.record(NewDelivery("a-2", "push", None, "o/r", None, None, b"{}"))
        for n in range(3):
            assert store.claim("a-2", f"dead-{n}")[0] == "claimed"
            rt.client.delete(keys.delivery_lock("a-2"))
        rt.client.zadd(keys.PENDING, {"a-2": time.time() - 1})
        assert sweeper.sweep_once() == []
        assert enqueued == ["a-1", "a-1"]
        record = store.get("a-2")
        assert record is not None and record.status == "failed"
        assert record.error is not None and record.error.startswith("attempts_exhausted: ")
        assert rt.client.zscore(keys.DEAD, "a-2") is not None
        assert not store.is_pending("a-2")

        # a claim past the limit (a message still queued for it) fails it without a run
        store.record(NewDelivery("a-3", "push", None, "o/r", None, None, b"{}"))
        for n in range(3):
            assert store.claim("a-3", f"dead-{n}")[0] == "claimed"
            rt.client.delete(keys.delivery_lock("a-3"))
        assert rt.per_process.processor().process("a-3") == "failed"
        assert down.runs == 1
        record = store.get("a-3")
        assert record is not None and record.error is not None
        assert record.error.startswith("attempts_exhausted: all 3 attempts were used")

        # a replay starts the count again
        assert store.requeue("a-2")
        record = store.get("a-2")
        assert record is not None and record.attempts == 0 and record.status == "queued"
    finally:
        rt.close()
