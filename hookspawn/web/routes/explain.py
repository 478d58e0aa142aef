"""POST /explain: the dry run of an event against every trigger of every agent (no side effects)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, errors
from hookspawn.web.http_errors import ApiError
from hookspawn.web.routes.models import ExplainAnswer
from triggers.json_codec import load_body
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.explain import DELIVERY_RE, EVENT_RE, explain
from workers.delivery.pipeline import SpawnPipeline

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN, STORE))


class ExplainRequest(BaseModel):
    """`{"event": NAME, "payload": <the raw webhook body>}`, optionally the delivery id; or
    `{"deliveryId": ID}` alone: the recorded delivery, its event and stored body."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        json_schema_extra={
            "anyOf": [
                {"required": ["event", "payload"]},
                {
                    "required": ["deliveryId"],
                    "not": {"anyOf": [{"required": ["event"]}, {"required": ["payload"]}]},
                },
            ]
        },
    )

    # the patterns are documented, not enforced here: explain answers 400 invalid_request for
    # a name or id that does not match them (a 422 would change what the route answers)
    # absent or given, never null: the schema says so (WithJsonSchema) and `_not_null` holds it
    event: Annotated[
        str | None,
        WithJsonSchema(
            {"type": "string", "minLength": 1, "maxLength": 64, "pattern": f"^{EVENT_RE.pattern}$"}
        ),
    ] = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="the X-GitHub-Event name (with payload; absent: the recorded delivery's)",
    )
    payload: Annotated[dict[str, Any] | None, WithJsonSchema({"type": "object"})] = Field(
        default=None,
        description="the webhook body as GitHub sends it (absent: the recorded delivery's, "
        "from deliveryId)",
    )
    delivery_id: Annotated[
        str | None, WithJsonSchema({"type": "string", "pattern": f"^{DELIVERY_RE.pattern}$"})
    ] = Field(
        default=None,
        alias="deliveryId",
        description="compute spawn ids for this delivery and look up earlier dispatches; alone: "
        "the recorded delivery to explain",
    )

    @field_validator("event", "payload", "delivery_id", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("null: leave the field out instead")
        return value

    @model_validator(mode="after")
    def _given_whole(self) -> ExplainRequest:
        """Event and payload together, or a recorded delivery's id alone."""
        if (self.event is None) != (self.payload is None):
            given, missing = ("event", "payload") if self.payload is None else ("payload", "event")
            raise ValueError(
                f"{given} needs {missing} too (or give deliveryId alone to explain a recorded "
                "delivery)"
            )
        if self.event is None and self.delivery_id is None:
            raise ValueError("give event and payload, or the deliveryId of a recorded delivery")
        return self


def _event_and_payload(store: DeliveryStore, body: ExplainRequest) -> tuple[str, Any]:
    """What to explain: the request's event and payload, or the recorded delivery's."""
    if body.event is not None and body.payload is not None:
        return body.event, body.payload
    assert body.delivery_id is not None  # ExplainRequest._given_whole
    found = store.get(body.delivery_id)
    raw = store.body(body.delivery_id) if found is not None else None
    if found is None or raw is None:
        raise ApiError(
            "delivery_not_found",
            f"no delivery {body.delivery_id!r} is recorded"
            + (" with its body (kept for the retention only)" if found is not None else ""),
        )
    return found.event, load_body(raw)


@router.post(
    "/explain",
    response_model=ExplainAnswer,
    response_model_exclude_unset=True,
    responses=errors(
        {
            400: "invalid_request: the body could not be parsed, or event / deliveryId is not "
            "a GitHub event name / delivery id, or only one of event and payload is given",
            404: "delivery_not_found: deliveryId alone names no recorded delivery (or its "
            "body is past the retention)",
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
        event, payload = _event_and_payload(rt.store, body)
        return explain(
            event,
            payload,
            agents=pipeline.agents.current(),
            coverage=pipeline.connections.snapshot(),
            dispatched=pipeline.spawns.dispatched,
            minting=pipeline.tokens is not None,
            delivery_id=body.delivery_id,
            agent_errors=pipeline.agents.last_errors,
        )

    return await run_in_threadpool(run)
