"""A session's GitHub tokens held in Redis, sealed, for several web processes to share.

With `hookspawn web --workers N` a session's credential requests and its `/end` reach any of
the N processes, and `/end` must revoke every token minted for the session, whichever process
minted it, before it answers. The tokens are therefore kept where every process reads them,
Redis, each sealed with AES-GCM (`cryptography`) under a 256-bit key the supervising parent
makes at start and hands its children in memory only (inherited across the fork: never in a
file, the environment, Redis or a log line). What Redis and its AOF hold is a nonce and a
ciphertext, bound to its session and field (the associated data), so it neither reads as a
token nor moves to another session. Any process then reuses a token another minted (fewer
mints than one per process) and `/end` revokes them all in one place, even those of a
process that died and was replaced since.

The other design, tokens in each process's memory and `/end` asking every process over
pub/sub, was not taken: a process that died would take its tokens with it (unrevoked until
they expire), and `/end` would wait on answers from processes it cannot count reliably.

A restart of the web makes a new key: tokens sealed under the old one cannot be read, so
`/end` counts them `failed` (they expire within the hour GitHub gives them), and the hash
expires with its newest token.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import cast

import orjson
import redis
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from workers import keys
from workers.github.client import MintedToken
from workers.session.tokens import Held

__all__ = ["KEY_BYTES", "SealedTokens", "new_key"]

#: AES-256
KEY_BYTES = 32
_NONCE = 12
#: what the sealed bytes are, in their associated data (with the session and the field)
_PURPOSE = b"hookspawn session token\x00"
#: the hash outlives its newest token by this much (a token is never read past its expiry)
_GRACE = 60


def new_key() -> bytes:
    """A fresh sealing key, for one start of the web's processes."""
    return AESGCM.generate_key(bit_length=KEY_BYTES * 8)


class SealedTokens:
    """The `SharedTokens` of `workers.session.tokens`, in one Redis hash per session."""

    def __init__(
        self, client: redis.Redis, key: bytes, *, clock: Callable[[], float] = time.time
    ) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"a sealing key is {KEY_BYTES} bytes, not {len(key)}")
        self._client = client
        self._aead = AESGCM(key)
        self._clock = clock

    def __repr__(self) -> str:
        return "SealedTokens()"  # never the key

    def held(self, session_id: str) -> list[Held]:
        stored = cast(dict[bytes, bytes], self._client.hgetall(keys.session_tokens(session_id)))
        return self._opened(session_id, stored)[0]

    def keep(self, session_id: str, held: Held) -> None:
        field = secrets.token_hex(8)
        token = held.token
        plain = orjson.dumps(
            {
                "installation": held.scope[0],
                "repositories": sorted(held.scope[1]),
                "scope": sorted(held.scope[2]),
                "token": token.token,
                "expiresAt": token.expires_at.timestamp(),
                "permissions": token.permissions,
                "repositoryIds": list(token.repository_ids),
            }
        )
        nonce = os.urandom(_NONCE)
        sealed = nonce + self._aead.encrypt(nonce, plain, _associated(session_id, field))
        key = keys.session_tokens(session_id)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.hset(key, field, sealed)
            pipe.expire(key, max(1, int(token.expires_at.timestamp() - self._clock()) + _GRACE))
            pipe.execute()

    def take(self, session_id: str) -> tuple[list[Held], int]:
        key = keys.session_tokens(session_id)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.hgetall(key)
            pipe.delete(key)
            stored, _ = pipe.execute()
        return self._opened(session_id, stored)

    def _opened(self, session_id: str, stored: dict[bytes, bytes]) -> tuple[list[Held], int]:
        """The unexpired tokens among `stored`, and how many could not be opened."""
        now = self._clock()
        held: list[Held] = []
        unreadable = 0
        for field, sealed in stored.items():
            try:
                nonce, body = sealed[:_NONCE], sealed[_NONCE:]
                plain = orjson.loads(
                    self._aead.decrypt(nonce, body, _associated(session_id, field.decode()))
                )
            except (InvalidTag, ValueError, UnicodeDecodeError):
                unreadable += 1
                continue
            if plain["expiresAt"] <= now:
                continue
            token = MintedToken(
                plain["token"],
                datetime.fromtimestamp(plain["expiresAt"], UTC),
                dict(plain["permissions"]),
                tuple(plain["repositoryIds"]),
            )
            scope = (
                int(plain["installation"]),
                frozenset(int(r) for r in plain["repositories"]),
                frozenset((str(k), str(v)) for k, v in plain["scope"]),
            )
            held.append(Held(scope, token))
        return held, unreadable


def _associated(session_id: str, field: str) -> bytes:
    return _PURPOSE + session_id.encode() + b"\x00" + field.encode()
