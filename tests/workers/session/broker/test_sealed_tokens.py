"""Session tokens shared between processes, sealed in Redis: reused and revoked by any holder of
the key, never readable without it, never readable as another session's."""

from __future__ import annotations

import time

import pytest
import redis

from tests.secret_scan import leaks, redis_haystacks
from tests.workers.session.broker.test_session_tokens import GitHubSide
from workers import keys
from workers.session.sealed_tokens import KEY_BYTES, SealedTokens, new_key
from workers.session.tokens import Revoked, SessionTokens

READ = {"contents": "read", "metadata": "read"}


def _process(
    client: redis.Redis, github: GitHubSide, key: bytes, now: list[float]
) -> SessionTokens:
    """One web process's session tokens: its own SessionTokens, the shared key."""
    clock = lambda: now[0]  # noqa: E731
    shared = SealedTokens(client, key, clock=clock)
    return SessionTokens(github.mint, github.revoke, clock=clock, shared=shared)


def test_a_token_one_process_minted_is_reused_and_revoked_by_another(
    redis_client: redis.Redis,
) -> None:
    now = [1_000_000.0]
    github, key = GitHubSide(), new_key()
    one, two = _process(redis_client, github, key, now), _process(redis_client, github, key, now)
    a1 = one.get("a", 7, [101], READ)
    assert two.get("a", 7, [101], READ) == a1 and github.minted == 1
    b1 = two.get("b", 7, [101], READ)
    assert b1.token != a1.token  # never another session's
    kept = time.monotonic()  # Redis counts the hash's life down by the wall clock from here
    a2 = two.get("a", 7, [102], READ)  # another scope: a token of its own
    assert one.holds("a") == two.holds("a") == 2

    # what Redis holds reads as no token, and expires with the newest one: its life is the
    # newest token's by the tokens' clock, plus the grace, less the wall-clock seconds since it
    # was set (however many the machine took)
    found, scanned = leaks({"a1": a1.token, "a2": a2.token}, redis_haystacks(redis_client))
    assert scanned > 0 and found == []
    ttl = redis_client.ttl(keys.session_tokens("a"))
    waited = time.monotonic() - kept
    life = a2.expires_at.timestamp() - now[0] + 60
    assert isinstance(ttl, int) and life - waited - 1 <= ttl <= life, (ttl, life, waited)

    assert one.revoke("a") == Revoked(revoked=2)
    assert sorted(github.revoked) == sorted([a1.token, a2.token])
    assert two.holds("a") == 0 and two.holds("b") == 1
    assert redis_client.exists(keys.session_tokens("a")) == 0
    assert two.revoke("a") == Revoked()


def test_expired_tokens_are_neither_reused_nor_revoked(redis_client: redis.Redis) -> None:
    now = [1_000_000.0]
    github, key = GitHubSide(), new_key()
    one, two = _process(redis_client, github, key, now), _process(redis_client, github, key, now)
    first = one.get("s", 7, [101], READ)
    now[0] += 3600 - 200  # within the refresh margin: a fresh token, the first still held
    second = two.get("s", 7, [101], READ)
    assert second.token != first.token and one.holds("s") == 2
    now[0] += 300  # the first has expired
    assert one.holds("s") == 1
    assert two.revoke("s") == Revoked(revoked=1)
    assert github.revoked == [second.token]


def test_tokens_sealed_under_another_key_are_counted_failed_and_forgotten(
    redis_client: redis.Redis,
) -> None:
    now = [1_000_000.0]
    github = GitHubSide()
    before = _process(redis_client, github, new_key(), now)  # an earlier start of the web
    before.get("s", 7, [101], READ)
    after = _process(redis_client, github, new_key(), now)
    assert after.holds("s") == 0
    minted = after.get("s", 7, [101], READ)  # it cannot reuse the old one: mints its own
    assert github.minted == 2
    assert after.revoke("s") == Revoked(revoked=1, failed=1)
    assert github.revoked == [minted.token]
    assert redis_client.exists(keys.session_tokens("s")) == 0


def test_a_sealed_token_copied_to_another_session_does_not_open(
    redis_client: redis.Redis,
) -> None:
    now = [1_000_000.0]
    github, key = GitHubSide(), new_key()
    tokens = _process(redis_client, github, key, now)
    tokens.get("victim", 7, [101], READ)
    stolen = redis_client.hgetall(keys.session_tokens("victim"))
    redis_client.hset(keys.session_tokens("thief"), mapping=stolen)  # type: ignore[arg-type]
    assert tokens.holds("thief") == 0
    assert tokens.revoke("thief") == Revoked(failed=1)
    assert github.revoked == []
    assert tokens.holds("victim") == 1


def test_a_key_of_the_wrong_size_is_refused(redis_client: redis.Redis) -> None:
    with pytest.raises(ValueError, match=f"a sealing key is {KEY_BYTES} bytes, not 16"):
        SealedTokens(redis_client, b"k" * 16)
    key = new_key()
    shown = repr(SessionTokens(GitHubSide().mint, GitHubSide().revoke)) + repr(
        SealedTokens(redis_client, key)
    )
    assert key.hex() not in shown and repr(key) not in shown
