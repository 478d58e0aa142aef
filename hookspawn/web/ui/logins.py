"""/ui logins: a random id per sign-in, kept in Redis with an expiry, revocable."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import redis

from workers import keys

#: how long a sign-in lasts, on the server and in the browser
SECONDS = 12 * 3600
#: longer than any id `create` makes: anything longer is not looked up
MAX_ID = 128


def _stored_as(login_id: str) -> str:
    """The key holds a digest of the id, so what Redis holds cannot be replayed as a cookie."""
    return keys.ui_login(hashlib.sha256(login_id.encode()).hexdigest())


def _bound_to(token: str) -> bytes:
    """What a login records of the admin token: a new token ends every earlier login."""
    return hmac.new(token.encode(), b"hookspawn-ui-session", "sha256").hexdigest().encode()


def create(client: redis.Redis, token: str) -> str:
    """A new login for a sign-in with `token`; its id is the cookie's value."""
    login_id = secrets.token_urlsafe(32)
    client.set(_stored_as(login_id), _bound_to(token), ex=SECONDS)
    return login_id


def valid(client: redis.Redis, token: str, login_id: str) -> bool:
    if not login_id or len(login_id) > MAX_ID:
        return False
    stored = client.get(_stored_as(login_id))
    return isinstance(stored, bytes) and hmac.compare_digest(stored, _bound_to(token))


def revoke(client: redis.Redis, login_id: str) -> None:
    if login_id and len(login_id) <= MAX_ID:
        client.delete(_stored_as(login_id))
