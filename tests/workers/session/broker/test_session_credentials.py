"""Session credentials against a real Redis, and their hand-over by the HTTP dispatcher when a
spawn is dispatched more than once (redelivery, retries after a lost answer)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis

from tests.conftest import session_spec
from tests.dispatch_target import DispatchTarget
from tests.secret_scan import leaks, redis_haystacks
from triggers.session.spec import BrokerAccess, SessionSpec
from workers import keys
from workers.delivery.credential_handover import CredentialHandover
from workers.delivery.dispatch import HttpDispatcher
from workers.errors import DispatchUnavailable, SessionEnded
from workers.session.credentials import SessionCredentials
from workers.session.records import SessionStore


def brokered_spec(session_id: str = "hs-cred") -> SessionSpec:
    """A session spec with only what every spec has, and a broker url."""
    return session_spec(
        session_id,
        agent="writer",
        origin="manual",
        broker=BrokerAccess(url=f"http://hookspawn.test/sessions/{session_id}"),
    )


def test_issue_verify_revoke_and_expiry(redis_client: redis.Redis) -> None:
    now = [1_000_000.0]
    store = SessionCredentials(redis_client, clock=lambda: now[0])
    first, second = store.issue("s1"), store.issue("s1")
    assert first.value != second.value
    assert store.verify("s1", first.value) and store.verify("s1", second.value)
    assert not store.verify("s2", first.value)
    assert not store.verify("s1", "")
    assert first.value not in repr(first)

    assert store.keep_only("s1", second.value)
    assert not store.verify("s1", first.value)
    assert store.verify("s1", second.value)

    now[0] += 24 * 3600 + 1  # past HOOKSPAWN_SESSION_CREDENTIAL_TTL's default
    assert not store.verify("s1", second.value)
    now[0] -= 2
    assert store.verify("s1", second.value)
    assert store.revoke("s1") == 1
    assert not store.verify("s1", second.value)
    assert redis_client.exists(keys.session_credentials("s1")) == 0


def test_a_second_dispatch_never_invalidates_the_credential_the_target_kept(
    redis_client: redis.Redis, target: DispatchTarget
) -> None:
    credentials = SessionCredentials(redis_client)
    sessions = SessionStore(redis_client)
    http = HttpDispatcher(target.url, sessions=sessions, tries=1)
    dispatcher = CredentialHandover(http, credentials)
    spec = brokered_spec()
    assert dispatcher.dispatch(spec) is True
    kept = target.sessions[spec.id]["broker"]["credential"]
    assert credentials.verify(spec.id, kept)

    # the answer was lost before the session was recorded: the spawn is dispatched again
    redis_client.delete(keys.session(spec.id))
    assert dispatcher.dispatch(spec) is False  # 409: the target keeps the first spec
    second = target.received[-1].body["broker"]["credential"]
    assert second != kept
    assert credentials.verify(spec.id, kept)
    assert not credentials.verify(spec.id, second)  # nobody holds it
    http.close()

    stored = sessions.get(spec.id)
    assert stored is not None and stored.spec_json()["broker"] == {
        "url": spec.broker.url if spec.broker else ""
    }
    found, _ = leaks({"kept": kept, "second": second}, redis_haystacks(redis_client))
    assert found == []


def test_a_failed_try_keeps_its_credential_until_a_later_one_is_taken(
    redis_client: redis.Redis, target: DispatchTarget
) -> None:
    credentials = SessionCredentials(redis_client)
    http = HttpDispatcher(target.url, sessions=SessionStore(redis_client), tries=1)
    dispatcher = CredentialHandover(http, credentials)
    target.script = [503]
    spec = brokered_spec("hs-retry")
    with pytest.raises(DispatchUnavailable):
        dispatcher.dispatch(spec)
    failed = target.received[-1].body["broker"]["credential"]
    assert credentials.verify(spec.id, failed)  # the target might have taken that try

    assert dispatcher.dispatch(spec) is True
    taken = target.sessions[spec.id]["broker"]["credential"]
    assert credentials.verify(spec.id, taken)
    assert not credentials.verify(spec.id, failed)
    http.close()


def test_a_spec_with_input_carries_its_credential_and_is_stored_without(
    redis_client: redis.Redis, target: DispatchTarget
) -> None:
    credentials = SessionCredentials(redis_client)
    sessions = SessionStore(redis_client)
    http = HttpDispatcher(target.url, sessions=sessions, tries=1)
    dispatcher = CredentialHandover(http, credentials)
    spec = brokered_spec("hs-input").model_copy(update={"input": {"payload": {"n": 1}}})
    assert dispatcher.dispatch(spec) is True
    http.close()
    body = target.sessions[spec.id]
    assert body["input"] == {"payload": {"n": 1}}
    assert credentials.verify(spec.id, body["broker"]["credential"])
    stored = sessions.get(spec.id)
    assert stored is not None
    assert stored.spec.input == {"payload": {"n": 1}}
    assert stored.spec_json()["broker"] == {"url": "http://hookspawn.test/sessions/hs-input"}


def test_an_ended_session_gets_no_new_credential(redis_client: redis.Redis) -> None:
    store = SessionCredentials(redis_client)
    held = store.issue("s1")
    assert store.revoke("s1") == 1
    assert not store.verify("s1", held.value)
    with pytest.raises(SessionEnded, match="s1 was ended"):
        store.issue("s1")
    assert store.issue("s2").value  # other sessions are not affected


def test_the_ended_mark_lasts_as_long_as_the_session_record(redis_client: redis.Redis) -> None:
    week = 7 * 24 * 3600
    redis_client.set(keys.session("kept"), "record", ex=week)
    store = SessionCredentials(redis_client, ttl=timedelta(hours=1))
    store.issue("kept")
    store.revoke("kept")
    assert week - 5 <= int(redis_client.ttl(keys.session_ended("kept"))) <= week
    # a record already gone (or kept shorter): never less than the credential lifetime
    store.revoke("gone")
    assert 3590 <= int(redis_client.ttl(keys.session_ended("gone"))) <= 3600
