"""Manual and agent-to-agent starts: the same spawn pipeline, with no event behind them."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any, cast

import orjson
import redis

from triggers.outcome import Outcome
from triggers.session.spec import Origin
from triggers.spawn_plan import DirectStart, Refused, startable
from triggers.spawn_rules import agent_spawn_id, manual_spawn_id, named_requester
from workers import keys
from workers.delivery.pipeline import SpawnPipeline
from workers.session.records import SessionStore

#: how long a start's `Idempotency-Key` stays bound to its body: GitHub's redelivery window,
#: the default retention of deliveries
KEY_SECONDS = 3 * 24 * 3600


@dataclass(frozen=True)
class StartRequest:
    display_title: str | None = None
    initial_prompt: str | None = None
    message: str | None = None
    requester: str | None = None
    idempotency_key: str | None = None

    @property
    def texts(self) -> tuple[str | None, str | None, str | None]:
        return self.display_title, self.initial_prompt, self.message

    def digest(self) -> str:
        """SHA-256 of what the start asks for (its body), without the key itself."""
        body = [self.display_title, self.initial_prompt, self.message, self.requester]
        return hashlib.sha256(orjson.dumps(body)).hexdigest()


def key_reused(
    client: redis.Redis, agent: str, session_id: str, request: StartRequest
) -> Outcome | None:
    """Bind the request's `Idempotency-Key` (through its spawn id) to its body, first come.

    None when the key is new or came with the same body before; the refusal otherwise.
    """
    digest = request.digest()
    key = keys.idempotency(session_id)
    for _ in range(2):  # the bound digest may expire between SET NX and GET: try once more
        if client.set(key, digest, nx=True, ex=KEY_SECONDS):
            return None
        bound = cast(bytes | None, client.get(key))
        if bound is None:
            continue
        if bound == digest.encode():
            return None
        break
    return _refused(
        agent,
        "idempotency_key_reused",
        f"Idempotency-Key {request.idempotency_key!r} was used with a different body for "
        f"agent {agent!r}: use a new key for a different start",
        idempotencyKey=request.idempotency_key,
    )


def _refused(agent: str, code: str, message: str, **details: Any) -> Outcome:
    return Outcome(agent=agent, outcome="refused", code=code, message=message, details=details)


def start_manual(pipeline: SpawnPipeline, agent_name: str, request: StartRequest) -> Outcome:
    key = request.idempotency_key
    session_id = manual_spawn_id(agent_name, key) if key else "hs-" + uuid.uuid4().hex
    start = DirectStart(
        session_id,
        Origin(kind="manual"),
        request.texts,
        named_requester(request.requester),
    )
    return _start(pipeline, agent_name, start, request)


def start_from_agent(
    pipeline: SpawnPipeline,
    sessions: SessionStore,
    parent_id: str,
    agent_name: str,
    request: StartRequest,
) -> Outcome:
    parent = sessions.get(parent_id)
    if parent is None:
        return _refused(agent_name, "session_not_found", f"no session {parent_id!r}")
    depth = parent.spec.depth + 1
    key = request.idempotency_key or uuid.uuid4().hex
    start = DirectStart(
        agent_spawn_id(parent_id, agent_name, key),
        Origin(kind="agent", parent_session_id=parent_id, depth=depth),
        request.texts,
        named_requester(request.requester) or parent.spec.requester,
    )
    return _start(pipeline, agent_name, start, request)


def _start(
    pipeline: SpawnPipeline, agent_name: str, start: DirectStart, request: StartRequest
) -> Outcome:
    """The plan's own checks first (nothing is written for a start they refuse), then the
    `Idempotency-Key`, then the pipeline."""
    checked = startable(agent_name, pipeline.agents.current().agent(agent_name), start)
    if isinstance(checked, Refused):
        return _refused(agent_name, checked.code, checked.message, **checked.details)
    if request.idempotency_key and (
        reused := key_reused(pipeline.spawns.client, agent_name, start.session_id, request)
    ):
        return reused
    return pipeline.start(checked, start)
