"""Installation tokens the broker hands to one session, and their revocation when it ends.

A session's git tokens are its own: minted for it, reused only by it (until near expiry), never
taken from or put into the spawn path's shared cache, so revoking them at
GitHub (`DELETE /installation/token`) when the session ends touches no other session. They
are held in this process's memory, never in a log line; with several web processes
(`hookspawn web --workers N`) they are held sealed in Redis instead, where every one of those
processes reuses and revokes them and nothing else can read them (workers.session.sealed_tokens).

A tool call's token is minted for that one call (`for_call`) and revoked at GitHub as soon as
the call is made (`release`, on a thread of its own, so the call's answer does not wait for
it): never reused, never shared between processes. Until it is revoked it is held in this
process's memory, so ending the session from this process revokes it too; one whose process
stops before revoking it dies at its expiry, within the hour.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from workers.errors import WorkerError
from workers.github.client import MintedToken
from workers.github.token_cache import REFRESH_MARGIN, Mint

__all__ = ["Held", "Revoked", "Scope", "SessionTokens", "SharedTokens"]

log = logging.getLogger(__name__)

#: what `revoke_token(token, installation_id)` is: usually `GitHubApp.revoke_token`
Revoke = Callable[[str, int], None]

#: what a token is for: installation id, repository ids, permissions
Scope = tuple[int, frozenset[int], frozenset[tuple[str, str]]]


def scope_of(
    installation_id: int, repository_ids: Sequence[int], permissions: Mapping[str, str]
) -> Scope:
    """What a token is minted for, in a form two requests for the same can be compared by."""
    return (
        int(installation_id),
        frozenset(int(r) for r in repository_ids),
        frozenset((str(k), str(v)) for k, v in permissions.items()),
    )


@dataclass(frozen=True)
class Revoked:
    """What ending a session did to its tokens: revoked now, already dead, not revoked."""

    revoked: int = 0
    already: int = 0
    failed: int = 0


@dataclass(frozen=True)
class Held:
    scope: Scope
    token: MintedToken


class SharedTokens(Protocol):
    """Where the tokens are held when several processes share them (instead of this memory)."""

    def held(self, session_id: str) -> list[Held]:
        """The session's unexpired tokens."""

    def keep(self, session_id: str, held: Held) -> None: ...

    def take(self, session_id: str) -> tuple[list[Held], int]:
        """Forget all the session's tokens: the unexpired ones, and how many could not be read."""


class SessionTokens:
    """Every unexpired token minted for each session, by session id; thread-safe."""

    def __init__(
        self,
        mint: Mint,
        revoke: Revoke,
        *,
        clock: Callable[[], float] = time.time,
        refresh_margin: float = REFRESH_MARGIN,
        shared: SharedTokens | None = None,
    ) -> None:
        self._mint = mint
        self._revoke = revoke
        self._clock = clock
        self._margin = refresh_margin
        self._lock = threading.Lock()
        self._held: dict[str, list[Held]] = {}
        #: the tool-call tokens in use now, by session (`for_call` until revoked)
        self._calls: dict[str, list[Held]] = {}
        self._revoker: ThreadPoolExecutor | None = None
        self._shared = shared

    def __repr__(self) -> str:
        with self._lock:
            return f"SessionTokens(sessions={len(self._held)})"

    def get(
        self,
        session_id: str,
        installation_id: int,
        repository_ids: Sequence[int],
        permissions: Mapping[str, str],
    ) -> MintedToken:
        """The session's own token for exactly this scope: one it holds (not within the refresh
        margin of its expiry), or a fresh one. Every token stays held until it expires, so
        ending the session revokes the replaced ones too."""
        scope = scope_of(installation_id, repository_ids, permissions)
        fresh = self._clock() + self._margin
        for held in self._held_by(session_id):
            if held.scope == scope and held.token.expires_at.timestamp() > fresh:
                return held.token
        token = self._mint(scope[0], sorted(scope[1]), dict(permissions))
        if self._shared is not None:
            self._shared.keep(session_id, Held(scope, token))
            return token
        with self._lock:
            self._held.setdefault(session_id, []).append(Held(scope, token))
        return token

    def for_call(
        self,
        session_id: str,
        installation_id: int,
        repository_ids: Sequence[int],
        permissions: Mapping[str, str],
    ) -> MintedToken:
        """A fresh token for one tool call, never one held: `release` it when the call is made
        (until then ending the session revokes it with the others)."""
        scope = scope_of(installation_id, repository_ids, permissions)
        token = self._mint(scope[0], sorted(scope[1]), dict(permissions))
        with self._lock:
            self._calls.setdefault(session_id, []).append(Held(scope, token))
        return token

    def release(self, session_id: str, token: MintedToken) -> Future[None] | None:
        """Revoke a tool call's token at GitHub, on the revoking thread, and forget it once
        revoked (None: ending the session revoked it already). One GitHub no longer takes is
        done with; one GitHub could not be asked about is logged and dies at its expiry."""
        with self._lock:
            calls = self._calls.get(session_id, [])
            found = next((h for h in calls if h.token is token), None)
            if found is None:
                return None
            if self._revoker is None:
                self._revoker = ThreadPoolExecutor(1, thread_name_prefix="hookspawn-revoke")
            revoker = self._revoker
        return revoker.submit(self._revoke_call, session_id, found)

    def _revoke_call(self, session_id: str, held: Held) -> None:
        with self._lock:
            calls = self._calls.get(session_id, [])
            if held not in calls:
                return  # the session's end took it meanwhile
        self._revoke_one(session_id, held)
        with self._lock:
            calls = self._calls.get(session_id, [])
            if held in calls:
                calls.remove(held)
            if not calls:
                self._calls.pop(session_id, None)

    def _revoke_one(self, session_id: str, held: Held) -> str:
        """`revoked`, `already` (GitHub refused it already) or `failed` (logged)."""
        installation_id, token = held.scope[0], held.token
        try:
            self._revoke(token.token, installation_id)
        except WorkerError as exc:
            if exc.details.get("status") == 401:
                return "already"
            log.warning(
                "session %s: a token of installation %s could not be revoked (%s); it "
                "expires at %s",
                session_id,
                installation_id,
                exc.message,
                token.expires_at.isoformat(),
            )
            return "failed"
        return "revoked"

    def holds(self, session_id: str) -> int:
        """How many unexpired tokens the session has."""
        return len(self._held_by(session_id))

    def _held_by(self, session_id: str) -> list[Held]:
        if self._shared is not None:
            return self._shared.held(session_id)
        with self._lock:
            self._drop_expired()
            return list(self._held.get(session_id, ()))

    def revoke(self, session_id: str) -> Revoked:
        """Revoke every unexpired token of the session at GitHub and forget them all.

        A token GitHub already refuses counts as `already`; one it could not be asked about
        (GitHub unreachable), or held sealed by processes of an earlier start (the key is gone
        with them), is logged and counted `failed`: it dies at its expiry.
        """
        unreadable = 0
        with self._lock:
            held = self._calls.pop(session_id, [])
        if self._shared is not None:
            shared, unreadable = self._shared.take(session_id)
            held += shared
        else:
            with self._lock:
                self._drop_expired()
                held += self._held.pop(session_id, [])
        if unreadable:
            log.warning(
                "session %s: %d token(s) sealed by an earlier start of the web could not be "
                "read, so not revoked; each expires within the hour it was minted",
                session_id,
                unreadable,
            )
        counts = {"revoked": 0, "already": 0, "failed": unreadable}
        for item in held:
            counts[self._revoke_one(session_id, item)] += 1
        return Revoked(counts["revoked"], counts["already"], counts["failed"])

    def _drop_expired(self) -> None:
        now = self._clock()
        for session_id in list(self._held):
            alive = [h for h in self._held[session_id] if h.token.expires_at.timestamp() > now]
            if alive:
                self._held[session_id] = alive
            else:
                del self._held[session_id]
