"""The dispatch target down for a while: retried under one key, `failed` past the budget,
then `POST /deliveries/{id}/replay` completes every spawn with no duplicate."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from tests.faults.conftest import Cluster

MAX_RETRIES = 2
TRIES = 3  # the HTTP dispatcher's quick tries within one attempt


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_dispatch_target_down_fails_past_the_budget_then_replay_completes_once(
    make_cluster: Callable[..., Cluster],
) -> None:
    # a lease a busy machine does not outlast: this test is about the backoff, not the sweep
    # (the worker-kill tests are). With 3 s, one loaded run showed a spawn tried again 0.92 s
    # after an attempt, less than a retry's 1 s countdown plus the other spawn's tries (1.6 s
    # at least): most likely a lapsed lease, the sweep enqueueing the delivery again at once
    cluster = make_cluster(lease=10.0, max_retries=MAX_RETRIES)
    target = cluster.target
    started = time.monotonic()
    with target.lock:
        target.script = [503] * 10_000  # down: whatever is in front of it answers 503
    deliveries = [cluster.send_pr().delivery for _ in range(3)]
    views = cluster.settle(deliveries)
    for delivery in deliveries:
        view = views[delivery]
        assert view["status"] == "processed", view
        outcomes = view["outcomes"]
        assert len(outcomes) == 2, outcomes
        for outcome in outcomes:
            assert outcome["outcome"] == "failed", outcome
            assert outcome["code"] == "dispatch_failed", outcome
            assert "gave up after retries" in outcome["message"], outcome
    assert not cluster.watch.created(), "a session was created while the target was down"

    # every spawn was tried (1 + MAX_RETRIES) times TRIES, always under its own key,
    # and the task waited (backoff, at least 1s) between one attempt and the next
    posts: dict[str, list[float]] = defaultdict(list)
    for answer in cluster.watch.snapshot():
        assert answer.key is not None, answer
        assert answer.key == answer.body["id"], answer
        posts[answer.key].append(answer.started)
    expected = set().union(*(cluster.expected_spawns(d) for d in deliveries))
    assert set(posts) == expected
    for key, times in posts.items():
        assert len(times) == (1 + MAX_RETRIES) * TRIES, (key, len(times))
        gaps = [b - a for a, b in itertools.pairwise(times)]
        waits = sorted(gaps)[-MAX_RETRIES:]
        assert all(w >= 1.0 for w in waits), f"{key}: no backoff between attempts: {gaps}"

    # the target comes back; the operator replays
    with target.lock:
        target.script = []
    for delivery in deliveries:
        cluster.replay(delivery)
    views = cluster.settle(deliveries, runs=2)
    cluster.audit(views).assert_clean()
    for delivery in deliveries:
        runs = views[delivery]["runs"]
        assert [o["outcome"] for o in runs[0]["outcomes"]] == ["failed", "failed"], runs[0]
    replayed_posts = len(cluster.watch.snapshot()) - sum(len(t) for t in posts.values())
    assert replayed_posts == len(expected), f"{replayed_posts} POSTs after the replay"
    scanned = cluster.assert_no_secrets()
    print(
        f"\ndispatch down: {len(expected)} spawns tried {(1 + MAX_RETRIES) * TRIES} times each "
        f"under one key, failed (dispatch_failed) past the budget, replayed: "
        f"{cluster.watch.created().total()} sessions, duplicates 0, "
        f"{time.monotonic() - started:.0f}s; secret scan {scanned}"
    )
