"""GET /metrics over real HTTP after real deliveries: every series counts what happened."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from hookspawn.web.api import create_app
from tests.conftest import make_settings, wait_for, webhook_headers
from tests.dispatch_target import DispatchTarget
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, start_hookspawn
from tests.workers.metrics.conftest import Scrape, scrape
from workers import keys, metrics
from workers.celery_app import celery_config
from workers.runtime import build_runtime

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


def post(client: httpx.Client, event: str, raw: bytes, **headers: str) -> httpx.Response:
    sent = webhook_headers(raw, event, f"d-{uuid.uuid4().hex[:12]}", **headers)
    return client.post("/webhooks/github", content=raw, headers=sent)


def settled(hs: Hookspawn, check: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> Scrape:
    """Scrape until every expected sample has its value (workers flush after each delivery)."""
    last: list[Scrape] = []

    def right() -> bool:
        last[:] = [scrape(hs.client)]
        return all(last[0].samples.get(k) == v for k, v in check.items())

    def wrong() -> str:
        got = last[0]
        found = {k: got.samples.get(k, 0.0) for k, v in check.items() if got.samples.get(k) != v}
        return f"expected {check}, got {found}\n{got.text}"

    wait_for(right, 20, 0.1, what=wrong)
    return last[0]


def key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return (name, tuple(sorted(labels.items())))


def test_deliveries_outcomes_latency_and_tokens_counted(hs: Hookspawn) -> None:
    connect(hs)
    pr = hs.send("pull_request", hs.pr())
    view = hs.processed(pr)
    assert hs.send("pull_request", hs.pr(), delivery=pr) == pr  # duplicate: 200
    bad_signature = post(hs.client, "pull_request", b"{}", **{"X-Hub-Signature-256": "sha256=0"})
    assert bad_signature.status_code == 401
    bad_body = post(hs.client, "pull_request", b"not json")
    assert bad_body.status_code == 400
    assert hs.client.post("/agents/nightly/sessions").status_code == 201
    assert hs.client.post("/agents/pr-review/sessions").status_code == 409  # event_required
    assert hs.client.post("/agents/elsewhere/sessions").status_code == 403

    trigger_outcomes = Counter((o["outcome"], o["code"] or "") for o in view["outcomes"])
    assert trigger_outcomes[("dispatched", "")] >= 1, view["outcomes"]
    assert trigger_outcomes[("refused", "unresolvable_ref")] == 1, view["outcomes"]
    expected = trigger_outcomes + Counter(
        {
            ("dispatched", ""): 1,
            ("refused", "event_required"): 1,
            ("refused", "unauthorized_repository"): 1,
        }
    )
    check = {
        key("hookspawn_outcomes_total", outcome=outcome, code=code): float(n)
        for (outcome, code), n in expected.items()
    }
    check[key("hookspawn_deliveries_processed_total", event="pull_request", status="processed")] = 1
    check[key("hookspawn_deliveries_processed_total", event="installation", status="processed")] = 1
    got = settled(hs, check)

    assert got.value("hookspawn_deliveries_total", event="installation", status="queued") == 1
    assert got.value("hookspawn_deliveries_total", event="pull_request", status="queued") == 1
    assert got.value("hookspawn_deliveries_total", event="pull_request", status="duplicate") == 1
    # the signature failed: the event header is not believed
    assert got.value("hookspawn_deliveries_total", event="unknown", status="invalid_signature") == 1
    assert got.value("hookspawn_deliveries_total", event="pull_request", status="invalid_body") == 1
    assert got.value("hookspawn_intake_duration_seconds_count") == 5
    assert got.value("hookspawn_intake_duration_seconds_sum") > 0

    dispatched_by_trigger = trigger_outcomes[("dispatched", "")]
    assert got.value("hookspawn_webhook_to_session_seconds_count") == dispatched_by_trigger
    assert got.value("hookspawn_webhook_to_session_seconds_bucket", le="+Inf") == (
        dispatched_by_trigger
    )
    assert got.value("hookspawn_webhook_to_session_seconds_sum") > 0

    # pr-review and head-branch ask for different permissions: two mints; the manual start of
    # nightly asks for head-branch's (the defaults) on the same repository: served from cache
    assert got.value("hookspawn_token_cache_lookups_total", result="miss") == 2
    assert got.value("hookspawn_token_cache_lookups_total", result="hit") == 1
    assert got.present("hookspawn_dispatch_retries_total")
    assert got.value("hookspawn_dispatch_retries_total") == 0
    assert got.value("hookspawn_queue_depth", queue="celery") == 0
    assert got.value("hookspawn_queue_depth", queue="pending") == 0
    assert got.value("hookspawn_dead_letters") == 0
    assert all(name.startswith("hookspawn_") for name in got.names)


def test_github_errors_and_processing_retries(hs: Hookspawn) -> None:
    connect(hs)
    # the first mint answers 500 (retried later), the next 422 permissions (a refusal)
    hs.github.fail_next("access_tokens", "server_error")
    hs.github.fail_next("access_tokens", "permissions")
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert len(view["runs"]) == 1
    check = {
        key("hookspawn_github_errors_total", **{"class": "server_error"}): 1.0,
        key("hookspawn_github_errors_total", **{"class": "permission_not_granted"}): 1.0,
        key("hookspawn_processing_retries_total", code="github_unavailable"): 1.0,
    }
    got = settled(hs, check)
    assert (
        sum(
            value
            for (name, _), value in got.samples.items()
            if name == "hookspawn_github_errors_total"
        )
        == 2
    )
    processed = got.value(
        "hookspawn_deliveries_processed_total", event="pull_request", status="processed"
    )
    assert processed == 1


def test_dispatch_retries_counted(hs_http: Hookspawn, target: DispatchTarget) -> None:
    connect(hs_http)
    target.fail_each = 2
    view = hs_http.processed(hs_http.send("pull_request", hs_http.pr()))
    assert hs_http.outcome(view, "pr-review")["outcome"] == "dispatched"
    retried = len(target.received) - len({r.key for r in target.received})
    assert retried >= 2
    settled(hs_http, {key("hookspawn_dispatch_retries_total"): float(retried)})


def test_queue_depth_while_no_worker_runs(
    redis_url: str, tmp_path: Path, webhooks_dir: Path
) -> None:
    rt = build_runtime(make_settings(redis_url=redis_url, data_dir=tmp_path / "data"))
    body = (webhooks_dir / "pull_request/opened.payload.json").read_bytes()
    try:
        with live_client(create_app(rt)) as client:
            for _ in range(3):
                assert post(client, "pull_request", body).status_code == 202
            got = scrape(client)
    finally:
        rt.close()
    assert got.value("hookspawn_queue_depth", queue="celery") == 3
    assert got.value("hookspawn_queue_depth", queue="pending") == 3
    assert got.value("hookspawn_deliveries_total", event="pull_request", status="queued") == 3


def test_another_process_counts_reach_the_web(redis_url: str, tmp_path: Path) -> None:
    """A worker is another process: what it flushes to Redis is what the web's /metrics shows."""
    program = (
        "import sys, redis\n"
        "from workers import metrics\n"
        "metrics.inc(metrics.GITHUB_ERRORS, 'timeout')\n"
        "metrics.inc(metrics.OUTCOMES, 'suppressed', 'repository_not_covered', amount=2)\n"
        "metrics.observe(metrics.SESSION_LATENCY, 3.0)\n"
        "assert metrics.flush(redis.Redis.from_url(sys.argv[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, redis_url],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rt = build_runtime(make_settings(redis_url=redis_url, data_dir=tmp_path / "data"))
    try:
        with live_client(create_app(rt)) as client:
            got = scrape(client)
    finally:
        rt.close()
    assert got.value("hookspawn_github_errors_total", **{"class": "timeout"}) == 1
    assert (
        got.value("hookspawn_outcomes_total", outcome="suppressed", code="repository_not_covered")
        == 2
    )
    bucket = "hookspawn_webhook_to_session_seconds_bucket"
    assert got.value(bucket, le="2.5") == 0
    assert got.value(bucket, le="5.0") == 1
    assert got.value(bucket, le="+Inf") == 1
    assert got.value("hookspawn_webhook_to_session_seconds_sum") == 3.0


def test_metrics_needs_the_admin_token(redis_url: str, tmp_path: Path) -> None:
    token = "metrics-admin-token"
    rt = build_runtime(
        make_settings(redis_url=redis_url, data_dir=tmp_path / "data", admin_token=token)
    )
    try:
        with live_client(create_app(rt)) as client:
            refused = client.get("/metrics")
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "unauthorized"
            assert "hookspawn_" in scrape(client, authorization=f"Bearer {token}").text
            assert client.post("/ui/login", data={"token": token}).status_code == 303
            assert scrape(client).present("hookspawn_dead_letters")
    finally:
        rt.close()


def test_flush_that_fails_keeps_its_counts_for_the_next(redis_url: str) -> None:
    recorder = metrics.MetricsBuffer()
    recorder.inc(metrics.OUTCOMES, "failed", "dispatch_failed")
    recorder.observe(metrics.SESSION_LATENCY, 0.2)
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    assert recorder.flush(down) is False
    assert recorder.pending() == 4  # the counter, and the bucket, count and sum
    client = redis.Redis.from_url(redis_url)
    try:
        assert recorder.flush(client) is True
        assert recorder.pending() == 0
        stored = {
            tuple(json.loads(field)): float(value)
            for field, value in client.hgetall(keys.METRICS).items()
        }
    finally:
        client.close()
    assert stored[("hookspawn_outcomes_total", "", "failed", "dispatch_failed")] == 1
    assert stored[("hookspawn_webhook_to_session_seconds", "0.25")] == 1
    assert stored[("hookspawn_webhook_to_session_seconds", "count")] == 1
    assert stored[("hookspawn_webhook_to_session_seconds", "sum")] == pytest.approx(0.2)


def test_the_celery_queue_key_is_the_queue_celery_uses() -> None:
    assert celery_config("redis://x")["task_default_queue"] == keys.CELERY_QUEUE


def test_labels_must_match_the_series() -> None:
    with pytest.raises(ValueError, match="hookspawn_outcomes_total takes labels"):
        metrics.MetricsBuffer().inc(metrics.OUTCOMES, "dispatched")


def test_replays_and_repeated_idempotency_keys_are_not_sessions_created(hs: Hookspawn) -> None:
    connect(hs)
    pr = hs.send("pull_request", hs.pr())
    first = hs.processed(pr)
    created = [o for o in first["outcomes"] if o["outcome"] == "dispatched"]
    assert created, first["outcomes"]
    assert all("alreadyExisted" not in o["details"] for o in created)

    assert hs.client.post(f"/deliveries/{pr}/replay").status_code == 202
    replayed = hs.processed(pr, runs=2)["runs"][-1]["outcomes"]
    repeats = [o for o in replayed if o["outcome"] == "dispatched"]
    assert [o["sessionId"] for o in repeats] == [o["sessionId"] for o in created]
    assert all(o["details"] == {"alreadyExisted": True} for o in repeats), repeats

    once = {"Idempotency-Key": "nightly-once"}
    started = hs.client.post("/agents/nightly/sessions", headers=once)
    again = hs.client.post("/agents/nightly/sessions", headers=once)
    assert started.status_code == again.status_code == 201
    assert started.json()["id"] == again.json()["id"]
    child = f"/sessions/{started.json()['id']}/spawn"
    spawned = hs.client.post(child, json={"agent": "nightly"}, headers=once)
    respawned = hs.client.post(child, json={"agent": "nightly"}, headers=once)
    assert spawned.status_code == respawned.status_code == 201, spawned.text
    assert spawned.json()["id"] == respawned.json()["id"]

    assert len(hs.sessions()) == len(created) + 2
    settled(
        hs,
        {
            key("hookspawn_outcomes_total", outcome="dispatched", code=""): len(created) + 2,
            key("hookspawn_spawn_repeats_total", origin="trigger"): len(created),
            key("hookspawn_spawn_repeats_total", origin="manual"): 1,
            key("hookspawn_spawn_repeats_total", origin="agent"): 1,
        },
    )
    # one latency per session created by a delivery, none for a replay
    got = scrape(hs.client)
    assert got.value("hookspawn_webhook_to_session_seconds_count") == len(created)


def test_a_flush_that_finds_the_buffer_taken_returns_once_redis_has_it(redis_url: str) -> None:
    """A scrape flushes, then reads: the counts another thread's flush took must be in Redis by
    the time the scrape's flush returns, or the scrape misses them."""
    recorder = metrics.MetricsBuffer()
    code = f"code_{uuid.uuid4().hex[:8]}"
    field = json.dumps(["hookspawn_outcomes_total", "", "failed", code], separators=(",", ":"))
    recorder.inc(metrics.OUTCOMES, "failed", code)
    client = redis.Redis.from_url(redis_url)
    admin = redis.Redis.from_url(redis_url)
    try:
        admin.client_pause(600, all=False)  # writes wait: the first flush waits in Redis
        first = threading.Thread(target=recorder.flush, args=(client,))
        first.start()
        wait_for(lambda: recorder.pending() == 0, timeout=5, what="the first flush took the buffer")
        assert recorder.flush(client) is True  # finds it empty: must wait for the first
        stored = client.hget(keys.METRICS, field)  # a read: not held by the pause
        first.join(timeout=5)
    finally:
        admin.client_unpause()
        client.close()
        admin.close()
    assert stored is not None and int(stored) == 1
