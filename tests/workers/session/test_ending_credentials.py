"""Every script that writes a session's terminal status ends its credentials in the same script,
and a credential never outlives its session record (a real Redis, the real scripts)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
import redis

from workers import keys
from workers.errors import SessionEnded
from workers.session.credentials import SessionCredentials
from workers.session.runs import SessionRuns
from workers.session.status import SessionStatus

TTL = 3600


def _runs_and_credentials(client: redis.Redis) -> tuple[SessionRuns, SessionCredentials]:
    return SessionRuns(client), SessionCredentials(client)


def _held(runs: SessionRuns, client: redis.Redis, session_id: str, *, lease: float = 30) -> None:
    client.set(keys.session(session_id), "{}", ex=TTL)  # the session record
    runs.queue(session_id, workspace=f"/w/{session_id}", ttl=TTL)
    assert runs.claim(session_id, "owner", lease)


def _succeeded(runs: SessionRuns, session_id: str) -> None:
    assert runs.advance(session_id, "owner", SessionStatus.SUCCEEDED)


def _failed(code: str) -> Callable[[SessionRuns, str], None]:
    def end(runs: SessionRuns, session_id: str) -> None:
        failure = {"code": code, "message": "it ended"}
        assert runs.advance(session_id, "owner", SessionStatus.FAILED, failure)

    return end


def _cancelled(runs: SessionRuns, session_id: str) -> None:
    assert runs.advance(session_id, "owner", SessionStatus.CANCELLED)


@pytest.mark.parametrize(
    "end",
    [
        _succeeded,
        _failed("setup_failed"),
        _failed("harness_timeout"),
        _failed("runner_stopped"),
        _failed("internal_error"),
        _cancelled,
    ],
    ids=["succeeded", "setup_failed", "harness_timeout", "runner_stopped", "internal", "cancel"],
)
def test_a_terminal_status_ends_the_credentials_as_it_is_written(
    redis_client: redis.Redis, end: Callable[[SessionRuns, str], None]
) -> None:
    runs, credentials = _runs_and_credentials(redis_client)
    _held(runs, redis_client, "s1")
    issued = credentials.issue("s1").value
    assert credentials.verify("s1", issued)
    end(runs, "s1")
    assert not credentials.verify("s1", issued)
    assert redis_client.exists(keys.session_credentials("s1")) == 0
    assert redis_client.exists(keys.session_ended("s1")) == 1
    # the session's tokens are left to the web to revoke: nobody ended it at its broker
    assert redis_client.zscore(keys.SESSIONS_UNREVOKED, "s1") is not None


def test_a_session_ended_at_its_broker_first_is_not_listed_for_revocation(
    redis_client: redis.Redis,
) -> None:
    runs, credentials = _runs_and_credentials(redis_client)
    _held(runs, redis_client, "s1")
    issued = credentials.issue("s1").value
    assert credentials.revoke("s1") == 1  # POST /end: tokens revoked at GitHub there
    _succeeded(runs, "s1")
    assert not credentials.verify("s1", issued)
    assert redis_client.zscore(keys.SESSIONS_UNREVOKED, "s1") is None


def test_the_lost_runner_sweep_ends_the_credentials(redis_client: redis.Redis) -> None:
    runs, credentials = _runs_and_credentials(redis_client)
    _held(runs, redis_client, "lost", lease=0.2)
    issued = credentials.issue("lost").value
    time.sleep(0.3)  # the lease runs out
    assert runs.sweep_lost() == ["lost"]
    view = runs.get("lost")
    assert view is not None and view.failure is not None and view.failure.code == "runner_lost"
    assert not credentials.verify("lost", issued)
    assert redis_client.exists(keys.session_ended("lost")) == 1
    assert redis_client.zscore(keys.SESSIONS_UNREVOKED, "lost") is not None
    with pytest.raises(SessionEnded, match="gets no new credential"):
        credentials.issue("lost")


def test_a_queued_session_cancelled_is_ended_and_never_issued_one(
    redis_client: redis.Redis,
) -> None:
    runs, credentials = _runs_and_credentials(redis_client)
    redis_client.set(keys.session("q"), "{}", ex=TTL)
    runs.queue("q", workspace="/w/q", ttl=TTL)
    assert runs.cancel("q") == "cancelled"
    assert redis_client.exists(keys.session_ended("q")) == 1
    with pytest.raises(SessionEnded, match="gets no new credential"):
        credentials.issue("q")
    # nothing was live: nothing for the web to revoke
    assert redis_client.zscore(keys.SESSIONS_UNREVOKED, "q") is None


def test_an_active_session_cancelled_keeps_its_credential_until_its_runner_ends_it(
    redis_client: redis.Redis,
) -> None:
    runs, credentials = _runs_and_credentials(redis_client)
    _held(runs, redis_client, "s1")
    issued = credentials.issue("s1").value
    assert runs.cancel("s1") == "staging"  # flagged: its runner stops it
    assert credentials.verify("s1", issued)
    _cancelled(runs, "s1")
    assert not credentials.verify("s1", issued)


def test_a_status_not_written_leaves_the_credentials_alone(redis_client: redis.Redis) -> None:
    runs, credentials = _runs_and_credentials(redis_client)
    _held(runs, redis_client, "s1")
    issued = credentials.issue("s1").value
    assert runs.advance("s1", "owner", SessionStatus.RUNNING)
    assert not runs.advance("s1", "another", SessionStatus.SUCCEEDED)  # not its holder
    assert credentials.verify("s1", issued)
    assert redis_client.exists(keys.session_ended("s1")) == 0


def test_a_credential_never_outlives_its_session_record(redis_client: redis.Redis) -> None:
    credentials = SessionCredentials(redis_client, ttl=timedelta(hours=24))
    redis_client.set(keys.session("short"), "{}", ex=120)  # a retention shorter than 24 h
    issued = credentials.issue("short")
    kept = redis_client.pttl(keys.session_credentials("short"))
    assert 0 < kept <= 120_000
    assert issued.expires_at.timestamp() <= time.time() + 121
    # a session kept longer than the credential lifetime: the lifetime holds
    redis_client.set(keys.session("long"), "{}", ex=3 * 86400)
    credentials.issue("long")
    assert 86_000_000 < redis_client.pttl(keys.session_credentials("long")) <= 86_400_000


def test_a_handed_over_credential_is_kept_no_longer_than_the_session_record(
    redis_client: redis.Redis,
) -> None:
    credentials = SessionCredentials(redis_client, ttl=timedelta(hours=24))
    issued = credentials.issue("d1")  # issued before the dispatch, the record not yet written
    assert redis_client.pttl(keys.session_credentials("d1")) > 86_000_000
    redis_client.set(keys.session("d1"), "{}", ex=60)  # the dispatch recorded it
    assert credentials.keep_only("d1", issued.value)
    assert 0 < redis_client.pttl(keys.session_credentials("d1")) <= 60_000
    assert credentials.verify("d1", issued.value)
