"""Delivery inspection and replay: GET /deliveries, GET /deliveries/{id}, POST …/replay."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, errors
from hookspawn.web.http_errors import ApiError
from hookspawn.web.routes.models import DeliveryList, DeliveryView, Queued
from hookspawn.web.routes.session_outcomes import latest_outcomes, with_session_status
from workers.runtime import Runtime

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN, STORE))
NOT_FOUND = {404: "delivery_not_found: no delivery with this id is recorded"}


def delivery_view(rt: Runtime, delivery_id: str) -> dict[str, Any]:
    delivery = rt.store.get(delivery_id)
    if delivery is None:
        raise ApiError("delivery_not_found", f"no delivery {delivery_id!r} is recorded")
    runs = rt.store.runs(delivery_id)
    latest = runs[-1] if runs else {}
    view = delivery.to_json()
    view["outcomes"] = with_session_status(rt, latest.get("outcomes", []))
    view["decisions"] = latest.get("decisions", [])
    if "agentsGeneration" in latest:
        view["agentsGeneration"] = latest["agentsGeneration"]
    view["runs"] = runs
    return view


@router.get("/deliveries", response_model=DeliveryList, response_model_exclude_unset=True)
async def list_deliveries(
    request: Request,
    event: str | None = None,
    status: str | None = None,
    repository: str | None = None,
    limit: int = Query(50, ge=1, le=1000),
) -> dict[str, Any]:
    rt = runtime(request)

    def load() -> list[dict[str, Any]]:
        found = rt.store.recent(event=event, status=status, repository=repository, limit=limit)
        outcomes = latest_outcomes(rt, [d.delivery_id for d in found])
        return [{**d.to_json(), "outcomes": o} for d, o in zip(found, outcomes, strict=True)]

    return {"items": await run_in_threadpool(load)}


@router.get(
    "/deliveries/{delivery_id}",
    response_model=DeliveryView,
    response_model_exclude_unset=True,
    responses=errors(NOT_FOUND),
)
async def get_delivery(request: Request, delivery_id: str) -> dict[str, Any]:
    return await run_in_threadpool(delivery_view, runtime(request), delivery_id)


@router.post(
    "/deliveries/{delivery_id}/replay",
    status_code=202,
    responses={
        202: {
            "model": Queued,
            "description": "queued for another run; `existingSessions`: the sessions the "
            "latest run dispatched, which exist already and are not run again",
        },
        **errors(NOT_FOUND),
    },
)
async def replay(request: Request, delivery_id: str) -> JSONResponse:
    rt = runtime(request)

    def go() -> list[dict[str, Any]]:
        # a session's id is derived from the delivery: the replay finds the sessions the last
        # run dispatched already there, and does not run them again
        (outcomes,) = latest_outcomes(rt, [delivery_id])
        if not rt.store.requeue(delivery_id):
            raise ApiError("delivery_not_found", f"no delivery {delivery_id!r} is recorded")
        rt.enqueue(delivery_id)
        return [
            {k: o[k] for k in ("sessionId", "agent", "sessionStatus") if k in o}
            for o in outcomes
            if o.get("outcome") == "dispatched" and o.get("sessionId")
        ]

    existing = await run_in_threadpool(go)
    answer = {"deliveryId": delivery_id, "status": "queued", "existingSessions": existing}
    return JSONResponse(answer, status_code=202)
