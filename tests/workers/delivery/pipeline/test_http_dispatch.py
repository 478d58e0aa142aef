"""Dispatch to HOOKSPAWN_DISPATCH_URL: retried under one Idempotency-Key, one session."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_settings
from tests.dispatch_target import DispatchTarget
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect
from workers import keys
from workers.delivery.credential_handover import CredentialHandover
from workers.delivery.dispatch import HttpDispatcher
from workers.delivery.pipeline import SpawnPipeline
from workers.runtime import build_runtime
from workers.session.credentials import SessionCredentials


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
    # every try carried a credential; the spawn failed for good, so none of them is valid
    carried = {
        (r.body["id"], r.body["broker"]["credential"])
        for r in target.received
        if r.body["agent"] == "pr-review"
    }
    assert carried
    credentials = SessionCredentials(hs_http.rt.client)
    assert not any(credentials.verify(session, c) for session, c in carried)
    for session, _ in carried:
        assert hs_http.rt.client.exists(keys.session_credentials(session)) == 0
    target.script = []
    assert hs_http.client.post(f"/deliveries/{delivery}/replay").status_code == 202
    view = hs_http.processed(delivery, runs=2)
    assert hs_http.outcome(view, "pr-review")["outcome"] == "dispatched"
    assert len([s for s in target.sessions.values() if s["agent"] == "pr-review"]) == 1
    session_id = hs_http.outcome(view, "pr-review")["sessionId"]
    taken = target.sessions[session_id]["broker"]["credential"]
    assert (session_id, taken) not in carried and credentials.verify(session_id, taken)


def _http_dispatcher(pipeline: SpawnPipeline) -> HttpDispatcher:
    """The HTTP dispatcher inside the credential hand-over that wraps it."""
    handover = pipeline.dispatcher
    assert isinstance(handover, CredentialHandover)
    assert isinstance(handover.inner, HttpDispatcher)
    return handover.inner


def test_closing_the_runtime_closes_the_dispatcher_and_the_next_use_builds_it_again(
    redis_url: str, tmp_path: Path, target: DispatchTarget
) -> None:
    settings = make_settings(
        redis_url=redis_url, data_dir=tmp_path / "data", dispatch_url=target.url
    )
    rt = build_runtime(settings)
    try:
        pipeline = rt.pipeline
        assert isinstance(pipeline, SpawnPipeline)
        client = _http_dispatcher(pipeline)._client
        assert not client.is_closed
        rt.close()
        assert client.is_closed
        again = rt.pipeline
        assert isinstance(again, SpawnPipeline) and again is not pipeline
        assert not _http_dispatcher(again)._client.is_closed
    finally:
        rt.close()
