"""Each session's own tokens: reused only by it, all revoked when it ends (pure bookkeeping; the
GitHub side is tested through the stand-in in test_session_end)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from workers.errors import GitHubUnavailable
from workers.github.client import MintedToken
from workers.session.tokens import Revoked, SessionTokens


class GitHubSide:
    """Mints numbered tokens and records revocations; some tokens refuse to be revoked."""

    def __init__(self) -> None:
        self.minted = 0
        self.revoked: list[str] = []
        self.answers: dict[str, int] = {}  # token → status GitHub answers to revoking it

    def mint(
        self, installation_id: int, repository_ids: Sequence[int], permissions: Mapping[str, str]
    ) -> MintedToken:
        self.minted += 1
        expires = datetime.fromtimestamp(1_000_000 + 3600 * self.minted, UTC)
        return MintedToken(
            self.token(self.minted), expires, dict(permissions), tuple(repository_ids)
        )

    @staticmethod
    def token(n: int) -> str:
        """The `n`th token minted: as long as GitHub's (40 characters), so that a scan for it
        in sealed bytes cannot find it there by chance, as it found a two-letter one."""
        return f"ghs_test{n:04d}".ljust(40, "x")

    def revoke(self, token: str, installation_id: int) -> None:
        status = self.answers.get(token, 204)
        if status != 204:
            raise GitHubUnavailable(f"GitHub answered {status}", status=status)
        self.revoked.append(token)


def test_tokens_are_reused_by_their_session_only_and_all_revoked_at_its_end() -> None:
    now = [1_000_000.0]
    github = GitHubSide()
    tokens = SessionTokens(github.mint, github.revoke, clock=lambda: now[0])
    read = {"contents": "read", "metadata": "read"}
    a1 = tokens.get("a", 7, [101], read)
    assert tokens.get("a", 7, [101], read) is a1
    b1 = tokens.get("b", 7, [101], read)
    assert b1.token != a1.token  # never another session's
    now[0] += 3600 - 200  # within the refresh margin of a1's expiry: a fresh one, a1 still held
    a2 = tokens.get("a", 7, [101], read)
    assert a2.token != a1.token and tokens.holds("a") == 2

    assert tokens.revoke("a") == Revoked(revoked=2)
    assert sorted(github.revoked) == sorted([a1.token, a2.token])
    assert tokens.holds("a") == 0 and tokens.holds("b") == 1
    assert tokens.revoke("a") == Revoked()


def test_dead_and_unreachable_tokens_are_counted_and_expired_ones_skipped() -> None:
    now = [1_000_000.0]
    github = GitHubSide()
    tokens = SessionTokens(github.mint, github.revoke, clock=lambda: now[0])
    for permission in ("contents", "issues", "checks"):
        tokens.get("s", 7, [101], {permission: "read"})
    github.answers = {github.token(1): 401, github.token(2): 503}
    assert tokens.revoke("s") == Revoked(revoked=1, already=1, failed=1)
    assert github.revoked == [github.token(3)]

    tokens.get("late", 7, [101], {"contents": "read"})
    now[0] += 5 * 3600  # expired: nothing left to revoke
    assert tokens.revoke("late") == Revoked()


def test_a_tool_call_token_is_its_own_and_revoked_once_released() -> None:
    github = GitHubSide()
    tokens = SessionTokens(github.mint, github.revoke, clock=lambda: 1_000_000.0)
    read = {"contents": "read", "metadata": "read"}
    held = tokens.get("s", 7, [101], read)
    first = tokens.for_call("s", 7, [101], read)
    second = tokens.for_call("s", 7, [101], read)
    # never a held token, never the same twice, and never kept for reuse
    assert len({held.token, first.token, second.token}) == 3
    assert tokens.get("s", 7, [101], read) is held
    revoking = tokens.release("s", first)
    assert revoking is not None
    revoking.result()
    assert github.revoked == [first.token]
    assert tokens.release("s", first) is None  # released once only
    # the session's end takes the one still in use with the held ones
    assert tokens.revoke("s") == Revoked(revoked=2)
    assert sorted(github.revoked) == sorted([first.token, second.token, held.token])
    assert tokens.release("s", second) is None  # revoked already by the end
    assert github.revoked.count(second.token) == 1
