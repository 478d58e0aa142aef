"""Dispatch to HOOKSPAWN_DISPATCH_URL: retried under one Idempotency-Key, one session."""

from __future__ import annotations

from tests.dispatch_target import DispatchTarget
from tests.pipeline.conftest import Hookspawn, connect


def test_500_500_201_makes_one_session_under_one_key(
    hs_http: Hookspawn, target: DispatchTarget
) -> None:
    connect(hs_http)
    target.fail_each = 2
    view = hs_http.processed(hs_http.send("pull_request", hs_http.pr()))
    outcome = hs_http.outcome(view, "pr-review")
    assert outcome["outcome"] == "dispatched"
    tries = [r for r in target.received if r.body["agent"] == "pr-review"]
    assert len(tries) == 3
    assert {r.key for r in tries} == {outcome["sessionId"]}
    assert len([s for s in target.sessions.values() if s["agent"] == "pr-review"]) == 1
    spec = tries[-1].body
    assert spec["id"] == outcome["sessionId"]
    assert spec["mounts"][0]["ref"] == "refs/pull/2/head"
    assert "token" not in str(spec).lower().replace("triggerkey", "")


def test_target_down_fails_then_replay_completes_once(
    hs_http: Hookspawn, target: DispatchTarget
) -> None:
    connect(hs_http)
    target.script = [503] * 200
    delivery = hs_http.send("pull_request", hs_http.pr())
    view = hs_http.processed(delivery)
    outcome = hs_http.outcome(view, "pr-review")
    assert outcome["outcome"] == "failed"
    assert outcome["code"] == "dispatch_failed"
    assert view["status"] == "processed"
    target.script = []
    assert hs_http.client.post(f"/deliveries/{delivery}/replay").status_code == 202
    view = hs_http.processed(delivery, runs=2)
    assert hs_http.outcome(view, "pr-review")["outcome"] == "dispatched"
    assert len([s for s in target.sessions.values() if s["agent"] == "pr-review"]) == 1
