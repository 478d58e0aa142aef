"""Each lifecycle script of workers/session/runs.py, branch by branch, against a real Redis."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import redis

from tests.conftest import make_settings, wait_for
from tests.workers.session.runner.conftest import (
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)
from workers import keys
from workers.session.runner.roots import workspaces_root
from workers.session.runner.service import RunnerService
from workers.session.runs import SessionRuns

#: the retention the run records of these tests get
TTL = 3600


def _queued(runs: SessionRuns, session_id: str = "s1") -> str:
    return runs.queue(session_id, workspace="/w/s1", ttl=TTL)


def _status(runs: SessionRuns, session_id: str) -> tuple[str, str | None]:
    view = runs.get(session_id)
    assert view is not None
    return view.status, view.failure.code if view.failure is not None else None


def test_only_the_holder_records_the_snapshot(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    _queued(runs)
    assert not runs.note_snapshot("s1", "a", snapshot="saved")  # queued: nobody holds it
    assert runs.claim("s1", "a", 30)
    assert not runs.note_snapshot("s1", "b", snapshot="saved")
    assert runs.note_snapshot("s1", "a", snapshotKey="k", snapshotScope="pull:o/r#2")
    assert runs.note_snapshot("s1", "a", snapshot="saved")
    view = runs.get("s1")
    assert view is not None
    assert (view.snapshot_key, view.snapshot_scope, view.snapshot) == (
        "k",
        "pull:o/r#2",
        "saved",
    )
    with pytest.raises(ValueError, match="status"):
        runs.note_snapshot("s1", "a", status="succeeded")
    assert runs.get("s1") == view


def test_only_the_holder_records_the_harness_run(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    _queued(runs)
    view = runs.get("s1")
    assert view is not None
    shown = view.to_json()
    assert (shown["harnessRun"], shown["result"], shown["usage"]) == (None, None, None)
    assert "harness" not in shown  # until then the spec's (the agent's harness name) shows
    assert not runs.note_harness("s1", "a", harness={"name": "codex"})  # nobody holds it
    assert runs.claim("s1", "a", 30)
    assert not runs.note_harness("s1", "b", harness={"name": "codex"})
    assert runs.note_harness("s1", "a", harness={"name": "codex"})
    usage = {"inputTokens": 3, "outputTokens": 1, "turns": 1}
    assert runs.note_harness(
        "s1", "a", harness={"name": "codex", "version": "0.1"}, result="Done.", usage=usage
    )
    view = runs.get("s1")
    assert view is not None
    assert view.harness is not None and (view.harness.name, view.harness.version) == (
        "codex",
        "0.1",
    )
    shown = view.to_json()
    assert shown["harnessRun"] == {"name": "codex", "version": "0.1"}
    assert (shown["result"], shown["usage"]) == ("Done.", usage)
    # over the spec's harness name (the agent's) once the run has one
    assert shown["harness"] == shown["harnessRun"]


def test_queue_records_once(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    assert _queued(runs) == "queued"
    assert runs.claim("s1", "a", 30)
    assert runs.queue("s1", workspace="/other", ttl=TTL) == "staging"
    view = runs.get("s1")
    assert view is not None
    assert (view.workspace, view.snapshot_key, view.failure) == ("/w/s1", None, None)
    assert set(view.times) == {"queued", "staging"}
    assert runs.get("nope") is None


def test_claim_takes_only_a_queued_session(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    assert not runs.claim("s1", "a", 30)  # no record
    _queued(runs)
    assert runs.claim("s1", "a", 30)
    assert not runs.claim("s1", "b", 30)  # taken
    assert redis_client.zscore(keys.RUNNER_LEASES, "s1") is not None


def test_the_taking_runner_records_where_the_session_root_is(redis_client: redis.Redis) -> None:
    """Whoever queued a session guessed its root from its own data directory; the runner that
    takes it, on another host with its own, says where it really is. A runner that does not
    say leaves the guess, and a session taken already keeps its taker's."""
    runs = SessionRuns(redis_client)
    _queued(runs)
    assert runs.claim("s1", "a", 30, workspace="/runner-a/workspaces/s1")
    assert not runs.claim("s1", "b", 30, workspace="/runner-b/workspaces/s1")
    view = runs.get("s1")
    assert view is not None and view.workspace == "/runner-a/workspaces/s1"
    _queued(runs, "s2")
    assert runs.claim("s2", "a", 30)
    view = runs.get("s2")
    assert view is not None and view.workspace == "/w/s1"


def test_advance_only_by_the_holder_and_never_past_an_end(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    _queued(runs)
    runs.claim("s1", "a", 30)
    assert not runs.advance("s1", "b", "setup")
    assert runs.advance("s1", "a", "setup")
    failure = {"code": "setup_failed", "message": "setup entry 'x' exited with status 1"}
    assert runs.advance("s1", "a", "failed", failure)
    assert not runs.advance("s1", "a", "succeeded")
    view = runs.get("s1")
    assert view is not None
    assert view.status == "failed" and view.to_json()["failure"] == failure
    assert redis_client.zscore(keys.RUNNER_LEASES, "s1") is None


def test_renew_reports_a_cancel_and_a_lost_session(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    _queued(runs)
    runs.claim("s1", "a", 30)
    assert runs.renew("s1", "a", 30) is False
    assert runs.renew("s1", "b", 30) is None
    assert runs.cancel("s1") == "staging"
    assert runs.renew("s1", "a", 30) is True
    runs.advance("s1", "a", "cancelled")
    assert runs.renew("s1", "a", 30) is None


def test_cancel_ends_a_queued_session_and_leaves_an_ended_one(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    assert runs.cancel("nope") is None
    _queued(runs)
    assert runs.cancel("s1") == "cancelled"
    assert not runs.claim("s1", "a", 30)
    _queued(runs, "s2")
    runs.claim("s2", "a", 30)
    runs.advance("s2", "a", "succeeded")
    assert runs.cancel("s2") == "succeeded"
    assert redis_client.hget(keys.session_run("s2"), "cancel") is None


def test_a_lease_run_out_fails_the_session_runner_lost(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    for session_id in ("s1", "s2", "s3"):
        _queued(runs, session_id)
    runs.claim("s1", "a", -1)  # a lease already out
    runs.claim("s2", "a", 60)
    runs.claim("s3", "a", 60)
    runs.advance("s3", "a", "succeeded")
    redis_client.zadd(keys.RUNNER_LEASES, {"s3": time.time() - 1})  # a stale entry, ended
    assert runs.sweep_lost() == ["s1"]
    assert runs.sweep_lost() == []
    assert _status(runs, "s1") == ("failed", "runner_lost")
    assert _status(runs, "s2") == ("staging", None)
    assert _status(runs, "s3") == ("succeeded", None)
    assert not runs.settle("s2")
    assert not runs.advance("s1", "a", "running")


def test_a_runner_sweeps_sessions_lost_by_another(redis_url: str, tmp_path: Path) -> None:
    settings = make_settings(redis_url=redis_url, data_dir=tmp_path, runner_lease_seconds=0.5)
    client = redis.Redis.from_url(redis_url)
    runs = SessionRuns(client)
    _queued(runs)
    runs.claim("s1", "a-runner-now-gone", -1)
    service = RunnerService(settings)
    sweeper = service.sweeper.start()
    try:
        wait_for(lambda: _status(runs, "s1") == ("failed", "runner_lost"))
    finally:
        sweeper.stop()
        service.close()
        client.close()
        # the runner's own directory for session roots, made outside the private tmp_path
        shutil.rmtree(workspaces_root(settings), ignore_errors=True)


def test_queued_sessions_are_indexed_until_taken_or_cancelled(redis_client: redis.Redis) -> None:
    runs = SessionRuns(redis_client)
    for session_id in ("s1", "s2", "s3"):
        _queued(runs, session_id)
    assert runs.waiting_since(60) == []
    assert sorted(runs.waiting_since(-1)) == ["s1", "s2", "s3"]
    runs.claim("s1", "a", 30)
    runs.cancel("s2")
    assert runs.waiting_since(-1) == ["s3"]
    assert runs.waiting_since(60) == []  # handed out again just now
    assert redis_client.zrange(keys.RUNNER_QUEUED, 0, -1) == [b"s3"]


def test_a_session_whose_run_message_was_lost_is_queued_again(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "lost-message")
    with hookspawn_web(settings) as hs:
        session_id = hs.start("lost-message")
        assert hs.rt.client.delete(keys.SESSIONS_QUEUE) == 1  # the message is gone
        with running_runner(settings, requeue_after=0):
            session = hs.wait_status(session_id, "succeeded", "failed")
    assert session["status"] == "succeeded", session


def test_a_run_record_is_kept_as_long_as_its_session_and_never_under_its_runner(
    redis_client: redis.Redis,
) -> None:
    runs = SessionRuns(redis_client)

    def ttl(session_id: str) -> int:
        return int(redis_client.ttl(keys.session_run(session_id)))

    for session_id in ("done", "lost", "cancelled"):
        _queued(runs, session_id)
        assert TTL - 5 < ttl(session_id) <= TTL  # a queued session expires with its session
        assert runs.claim(session_id, "a", 60 if session_id != "lost" else -1)
        assert ttl(session_id) == -1  # held by a runner: kept however long it runs
    runs.advance("done", "a", "running")
    assert ttl("done") == -1
    runs.advance("done", "a", "succeeded")
    assert runs.sweep_lost() == ["lost"]
    assert runs.cancel("cancelled") == "staging"
    runs.advance("cancelled", "a", "cancelled")
    for session_id in ("done", "lost", "cancelled"):
        assert TTL - 5 < ttl(session_id) <= TTL, session_id  # kept the retention after its end


def test_a_queued_session_whose_record_expired_is_not_queued_again(
    redis_client: redis.Redis,
) -> None:
    runs = SessionRuns(redis_client)
    _queued(runs, "kept")
    runs.queue("expiring", workspace="/w/e", ttl=1)
    wait_for(lambda: not redis_client.exists(keys.session_run("expiring")), timeout=5)
    assert runs.waiting_since(-1) == ["kept"]
    assert redis_client.zrange(keys.RUNNER_QUEUED, 0, -1) == [b"kept"]
