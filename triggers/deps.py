"""Request-scoped access to the process runtime, and the admin-token check."""

from __future__ import annotations

import hmac

import redis.asyncio as aioredis
from fastapi import Request

from triggers.http_errors import ApiError
from workers.runtime import Runtime


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def async_redis(request: Request) -> aioredis.Redis:
    """The event loop's Redis client (intake's one round trip), made on first use."""
    client: aioredis.Redis | None = getattr(request.app.state, "aredis", None)
    if client is None:
        client = aioredis.Redis.from_url(
            runtime(request).redis_url, socket_timeout=5, socket_connect_timeout=2
        )
        request.app.state.aredis = client
    return client


def require_admin(request: Request) -> None:
    """`Authorization: Bearer $HOOKSPAWN_ADMIN_TOKEN`, when a token is configured."""
    token = runtime(request).settings.admin_token
    if not token:
        return
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
        return
    cookie = request.cookies.get("hookspawn_session")
    if cookie and hmac.compare_digest(cookie.encode(), session_cookie(token).encode()):
        return
    raise ApiError(401, "unauthorized", "this endpoint needs Authorization: Bearer <admin token>")


def session_cookie(token: str) -> str:
    """The /ui sign-in cookie: derived from the admin token, so it changes when the token does."""
    return hmac.new(token.encode(), b"hookspawn-ui-session", "sha256").hexdigest()
