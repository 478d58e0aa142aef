"""process_delivery on a real Celery worker over a real Redis: at least once, never lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from hookspawn.web.api import create_app
from tests.conftest import make_settings, running_worker, wait_for, webhook_headers
from tests.live_server import live_client
from workers import keys
from workers.delivery.processing import RunResult, backoff
from workers.delivery.record import Delivery, NewDelivery
from workers.delivery.sweep import Sweeper
from workers.delivery.upkeep import IndexUpkeep
from workers.errors import GitHubUnavailable
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings


class Recording:
    """A pipeline that remembers every envelope it saw (and can fail transiently first)."""

    def __init__(self, failures: int = 0) -> None:
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.failures = failures
        self.lock = threading.Lock()

    def run(
        self,
        delivery: Delivery,
        body: Mapping[str, Any],
        envelope: dict[str, Any],
        *,
        final_attempt: bool,
    ) -> RunResult:
        with self.lock:
            self.seen.setdefault(delivery.delivery_id, []).append(envelope)
            if self.failures > 0:
                self.failures -= 1
                raise GitHubUnavailable("stand-in outage", retry_after=0.5)
        return RunResult()

    def dispatch_staged(self, result: RunResult) -> int:
        raise AssertionError("this pipeline stages no sessions")

    def close(self) -> None:
        """Holds nothing."""


def post(client: httpx.Client, path: Path, event: str, delivery: str) -> httpx.Response:
    body = path.read_bytes()
    return client.post(
        "/webhooks/github",
        content=body,
        headers=webhook_headers(body, event, delivery),
    )


@pytest.fixture
def recording() -> Recording:
    return Recording()


@pytest.fixture
def rt(redis_url: str, tmp_path: Path, recording: Recording) -> Iterator[Runtime]:
    settings = make_settings(redis_url=redis_url, data_dir=tmp_path, max_retries=2)
    runtime = build_runtime(settings, pipeline=recording)
    yield runtime
    runtime.close()


@pytest.mark.slow
def test_every_example_payload_is_accepted_and_processed(
    rt: Runtime, recording: Recording, webhooks_dir: Path
) -> None:
    payloads = sorted(webhooks_dir.glob("*/*.json"))
    assert len(payloads) > 250
    expected: dict[str, tuple[str, Path]] = {}
    with running_worker(rt, concurrency=4), live_client(create_app(rt)) as client:
        for n, path in enumerate(payloads):
            event = path.parent.name
            delivery = f"ex-{n}"
            response = post(client, path, event, delivery)
            assert response.status_code == (200 if event == "ping" else 202), (path, response.text)
            expected[delivery] = (event, path)
        wait_for(lambda: len(recording.seen) == len(expected), timeout=90)
        wait_for(lambda: rt.client.zcard(keys.PENDING) == 0, timeout=30)
    for delivery, (event, path) in expected.items():
        assert len(recording.seen[delivery]) == 1, delivery
        github = recording.seen[delivery][0]["github"]
        assert github["event"] == event
        assert github["deliveryId"] == delivery
        assert all("_" not in k.strip("_") for k in github), (path, sorted(github))
        record = rt.store.get(delivery)
        assert record is not None and record.status == "processed", path
    pr = recording.seen[
        next(
            d
            for d, (e, p) in expected.items()
            if p.name == "opened.payload.json" and e == "pull_request"
        )
    ][0]
    assert pr["github"]["pullRequest"]["number"] == 2
    assert pr["github"]["pullRequest"]["head"]["ref"] == "changes"
    assert "htmlUrl" in pr["github"]["pullRequest"]


def test_transient_failure_is_retried_then_processed(rt: Runtime, recording: Recording) -> None:
    recording.failures = 2
    rt.store.record(
        NewDelivery("t-1", "push", None, "o/r", None, None, b'{"ref": "refs/heads/main"}')
    )
    with running_worker(rt):
        rt.enqueue("t-1")
        wait_for(
            lambda: (d := rt.store.get("t-1")) is not None and d.status == "processed", timeout=30
        )
    assert len(recording.seen["t-1"]) == 3
    assert not rt.store.is_pending("t-1")


def test_retries_exhausted_leave_it_failed_and_replayable(
    rt: Runtime, recording: Recording
) -> None:
    recording.failures = 3  # max_retries=2: three attempts, all failing
    rt.store.record(NewDelivery("f-1", "push", None, "o/r", None, None, b"{}"))
    with running_worker(rt), live_client(create_app(rt)) as client:
        rt.enqueue("f-1")
        wait_for(
            lambda: (d := rt.store.get("f-1")) is not None and d.status == "failed", timeout=30
        )
        view = client.get("/deliveries/f-1").json()
        assert view["status"] == "failed"
        assert "github_unavailable" in view["error"]
        assert rt.client.zscore(keys.DEAD, "f-1") is not None
        assert client.post("/deliveries/f-1/replay").status_code == 202
        wait_for(
            lambda: (d := rt.store.get("f-1")) is not None and d.status == "processed", timeout=30
        )
        view = client.get("/deliveries/f-1").json()
    assert view["error"] is None
    assert [r["status"] for r in view["runs"]] == ["failed", "processed"]
    assert rt.client.zscore(keys.DEAD, "f-1") is None


def test_lost_message_is_taken_up_by_the_sweep(rt: Runtime, recording: Recording) -> None:
    # recorded but never enqueued, as when a worker dies between BRPOP and the unacked record
    rt.store.record(NewDelivery("l-1", "push", None, "o/r", None, None, b"{}"))
    sweeper = Sweeper(rt.store, rt.enqueue, interval=0.2)
    assert sweeper.sweep_once() == []  # lease still running: not lost yet
    rt.client.zadd(keys.PENDING, {"l-1": time.time() - 1})  # the lease ran out
    with running_worker(rt):
        sweeper.start()
        try:
            wait_for(lambda: "l-1" in recording.seen, timeout=20)
        finally:
            sweeper.stop()
    assert len(recording.seen["l-1"]) == 1
    record = rt.store.get("l-1")
    assert record is not None and record.status == "processed"


def test_processed_delivery_is_not_run_again(rt: Runtime, recording: Recording) -> None:
    rt.store.record(NewDelivery("p-1", "push", None, "o/r", None, None, b"{}"))
    rt.store.record(NewDelivery("marker", "push", None, "o/r", None, None, b"{}"))
    # one thread takes the messages in order: once the marker ran, so had both redeliveries
    with running_worker(rt, concurrency=1):
        rt.enqueue("p-1")
        wait_for(lambda: (d := rt.store.get("p-1")) is not None and d.status == "processed")
        rt.enqueue("p-1")  # a redelivered message
        rt.enqueue("p-1")
        rt.enqueue("marker")
        wait_for(lambda: "marker" in recording.seen)
    assert len(recording.seen["p-1"]) == 1


def test_waiting_retry_is_not_mistaken_for_lost_work(rt: Runtime, recording: Recording) -> None:
    recording.failures = 1
    rt.store.record(NewDelivery("w-1", "push", None, "o/r", None, None, b"{}"))
    with running_worker(rt):
        rt.enqueue("w-1")
        wait_for(lambda: "w-1" in recording.seen)
        # the retry is waiting on its countdown: its lease covers the wait
        score = rt.client.zscore(keys.PENDING, "w-1")
        assert score is not None and score > time.time()
        assert Sweeper(rt.store, rt.enqueue).sweep_once() == []
        wait_for(lambda: (d := rt.store.get("w-1")) is not None and d.status == "processed")


def test_each_sweep_of_a_delivery_waits_longer(rt: Runtime) -> None:
    rt.store.record(NewDelivery("s-1", "push", None, "o/r", None, None, b"{}"))
    lease = rt.store.lease
    deadlines = []
    for _ in range(7):
        rt.client.zadd(keys.PENDING, {"s-1": time.time() - 1})
        before = time.time()
        assert rt.store.claim_due().again == ["s-1"]
        after = time.time()
        score = rt.client.zscore(keys.PENDING, "s-1")
        assert score is not None
        deadlines.append((score - before, score - after))  # the wait, from either side of it
    expected = [lease * 2**n for n in (1, 2, 3, 4, 5, 5, 5)]
    for (longest, shortest), want in zip(deadlines, expected, strict=True):
        assert shortest - 1 <= want <= longest + 1, (shortest, want, longest)
    rt.store.finish("s-1", {"run": 1}, status="processed", error=None)
    # the worker's upkeep drops the count of a delivery no longer pending
    assert rt.client.hget(keys.SWEPT, "s-1") == b"7"
    IndexUpkeep(rt.client, retention_seconds=3600, session_retention_seconds=3600).run_once()
    assert rt.client.hget(keys.SWEPT, "s-1") is None


def test_retry_backoff_starts_at_its_floor_and_keeps_a_longer_retry_after() -> None:
    for retries in range(6):
        # the product's floor: 1 s, jittered up to 2**(retries + 1) s, at most the cap
        assert 1.0 <= backoff(retries, None, cap=120) <= min(120, 2.0 ** (retries + 1))
        lowered = backoff(retries, None, cap=120, floor=0.01)
        assert 0.01 <= lowered <= 0.01 * 2.0 ** (retries + 1)
    assert backoff(0, 0.5, cap=120) == 1.0  # a Retry-After below the floor waits the floor
    assert backoff(0, 0.5, cap=120, floor=0.05) == 0.5
    assert backoff(0, 500, cap=120, floor=0.05) == 120


def test_retry_backoff_floor_is_a_setting() -> None:
    assert make_settings().retry_backoff_floor < 1.0  # the tests' own, lowered
    assert Settings.model_validate({}).retry_backoff_floor == 1.0
    assert Settings.model_validate({"retry_backoff_floor": "0.25"}).retry_backoff_floor == 0.25
    with pytest.raises(ValidationError, match="retry_backoff_floor"):
        Settings.model_validate({"retry_backoff_floor": 0})
