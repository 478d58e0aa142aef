"""The web's part in ending sessions: revoking at GitHub the tokens of sessions whose end was
written without their broker.

Every script that writes a session's terminal status also revokes its session credentials
(workers/session/runs.py), so the broker refuses them at once, wherever that status was
written. The session's GitHub tokens, though, are held by the web (in memory, or sealed in
Redis with a key only the web's processes have): a session ended elsewhere with live
credentials (its runner lost, say) is listed in keys.SESSIONS_UNREVOKED, and the web revokes
its tokens from that list every few seconds, best effort (a token not revoked dies at its
expiry, within the hour).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
from fastapi import FastAPI

from hookspawn.web.periodic import every
from workers import keys
from workers.runtime import Runtime

__all__ = ["INTERVAL", "revoking"]

log = logging.getLogger(__name__)

#: seconds between two looks at the list
INTERVAL = 2.0


def revoke_listed(rt: Runtime) -> list[str]:
    """One pass over the list: the sessions whose tokens were revoked (or found dead)."""
    if not rt.client.zcard(keys.SESSIONS_UNREVOKED):
        return []
    return rt.broker.revoke_unrevoked()


@asynccontextmanager
async def revoking(app: FastAPI) -> AsyncIterator[None]:
    """App lifespan: `revoke_listed` every INTERVAL seconds."""
    rt: Runtime = app.state.runtime

    def revoke() -> None:
        try:
            for session_id in revoke_listed(rt):
                log.info("session %s: ended without its broker; its tokens revoked", session_id)
        except redis.RedisError as exc:
            log.warning("revoking the tokens of ended sessions failed: %s", exc)
        except Exception:  # a bug: logged, and the loop goes on
            log.exception("revoking the tokens of ended sessions failed")

    async with every(INTERVAL, revoke):
        yield
