"""POST /explain: the dry run of an event against every trigger of every agent (no side effects)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from hookspawn.web.api_models import ExplainAnswer
from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, errors
from hookspawn.web.http_errors import ApiError
from workers.delivery.explain import DELIVERY_RE, EVENT_RE, explain
from workers.delivery.pipeline import SpawnPipeline

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN, STORE))


class ExplainRequest(BaseModel):
    """`{"event": NAME, "payload": <the raw webhook body>}`, optionally the delivery id."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # the patterns are documented, not enforced here: explain answers 400 invalid_request for
    # a name or id that does not match them (a 422 would change what the route answers)
    event: str = Field(
        min_length=1,
        max_length=64,
        description="the X-GitHub-Event name",
        json_schema_extra={"pattern": f"^{EVENT_RE.pattern}$"},
    )
    payload: dict[str, Any] = Field(description="the webhook body as GitHub sends it")
    delivery_id: str | None = Field(
        default=None,
        alias="deliveryId",
        description="compute spawn ids for this delivery and look up earlier dispatches",
        json_schema_extra={"pattern": f"^{DELIVERY_RE.pattern}$"},
    )


@router.post(
    "/explain",
    response_model=ExplainAnswer,
    response_model_exclude_unset=True,
    responses=errors(
        {
            400: "invalid_request: the body could not be parsed, or event / deliveryId is not "
            "a GitHub event name / delivery id",
            501: "explain_unavailable: this server's pipeline cannot be explained",
        },
    ),
)
async def explain_event(request: Request, body: ExplainRequest) -> dict[str, Any]:
    rt = runtime(request)

    def run() -> dict[str, Any]:
        pipeline = rt.pipeline
        if not isinstance(pipeline, SpawnPipeline):
            raise ApiError("explain_unavailable", "this server's pipeline cannot be explained")
        return explain(
            body.event,
            body.payload,
            agents=pipeline.agents.current(),
            coverage=pipeline.connections.snapshot(),
            dispatched=pipeline.spawns.dispatched,
            minting=pipeline.tokens is not None,
            delivery_id=body.delivery_id,
            agent_errors=pipeline.agents.last_errors,
        )

    return await run_in_threadpool(run)
