"""Installation tokens cached per (installation, repositories, permissions) until near expiry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

from workers import metrics
from workers.errors import AccessRevoked
from workers.github.client import MintedToken

__all__ = ["REFRESH_MARGIN", "TokenCache"]

REFRESH_MARGIN = 300.0
"""Seconds before `expires_at` at which a cached token is no longer handed out."""

_Key = tuple[int, frozenset[int], frozenset[tuple[str, str]]]
Mint = Callable[[int, Sequence[int], Mapping[str, str]], MintedToken]


class TokenCache:
    """A thread-safe token cache in front of a mint function (usually `GitHubApp.mint_token`).

    Concurrent misses for one key mint once; different keys mint in parallel. A definitive
    refusal (`AccessRevoked`) drops what it made useless. `hits` and `misses` count for metrics.
    """

    def __init__(
        self,
        mint: Mint,
        *,
        clock: Callable[[], float] = time.time,
        refresh_margin: float = REFRESH_MARGIN,
    ) -> None:
        self._mint = mint
        self._clock = clock
        self._margin = refresh_margin
        self._lock = threading.Lock()
        self._tokens: dict[_Key, MintedToken] = {}
        self._minting: dict[_Key, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"TokenCache(size={len(self._tokens)}, hits={self.hits}, misses={self.misses})"

    def __len__(self) -> int:
        with self._lock:
            return len(self._tokens)

    def get(
        self, installation_id: int, repository_ids: Sequence[int], permissions: Mapping[str, str]
    ) -> MintedToken:
        key: _Key = (
            int(installation_id),
            frozenset(int(r) for r in repository_ids),
            frozenset((str(k), str(v)) for k, v in permissions.items()),
        )
        with self._lock:
            token = self._fresh(key)
            if token is not None:
                self.hits += 1
                metrics.inc(metrics.TOKEN_CACHE, "hit")
                return token
            key_lock = self._minting.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                token = self._fresh(key)  # another thread minted it while we waited
                if token is not None:
                    self.hits += 1
                    metrics.inc(metrics.TOKEN_CACHE, "hit")
                    return token
                self.misses += 1
                metrics.inc(metrics.TOKEN_CACHE, "miss")
            try:
                token = self._mint(key[0], sorted(key[1]), dict(permissions))
            except AccessRevoked as revoked:
                self._forget(revoked)
                raise
            with self._lock:
                self._tokens[key] = token
                self._evict_expired()
            return token

    def invalidate_installation(self, installation_id: int) -> int:
        """Drop every token of one installation; returns how many were dropped."""
        with self._lock:
            doomed = [key for key in self._tokens if key[0] == installation_id]
            for key in doomed:
                del self._tokens[key]
            return len(doomed)

    def invalidate_repositories(self, installation_id: int, repository_ids: Sequence[int]) -> int:
        """Drop the installation's tokens that cover any of these repositories."""
        lost = set(repository_ids)
        with self._lock:
            doomed = [k for k in self._tokens if k[0] == installation_id and k[1] & lost]
            for key in doomed:
                del self._tokens[key]
            return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._tokens.clear()

    def _fresh(self, key: _Key) -> MintedToken | None:
        token = self._tokens.get(key)
        if token is None:
            return None
        if self._clock() >= token.expires_at.timestamp() - self._margin:
            del self._tokens[key]
            return None
        return token

    def _evict_expired(self) -> None:
        cutoff = self._clock() + self._margin
        for key in [k for k, t in self._tokens.items() if t.expires_at.timestamp() <= cutoff]:
            del self._tokens[key]

    def _forget(self, revoked: AccessRevoked) -> None:
        if revoked.kind == "repository_inaccessible" and revoked.repository_ids:
            self.invalidate_repositories(revoked.installation_id, revoked.repository_ids)
        else:
            self.invalidate_installation(revoked.installation_id)
