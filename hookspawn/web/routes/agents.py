"""GET /agents: the compiled agents, their triggers and whether each is event-dependent."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, errors
from hookspawn.web.routes.models import AgentList
from workers.agents_source import AgentsSource
from workers.delivery.pipeline import SpawnPipeline

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN))


@router.get("/agents", response_model=AgentList, response_model_exclude_unset=True)
async def list_agents(request: Request) -> dict[str, Any]:
    rt = runtime(request)

    def load() -> dict[str, Any]:
        pipeline = rt.pipeline
        source: AgentsSource | None = (
            pipeline.agents if isinstance(pipeline, SpawnPipeline) else None
        )
        if source is None:
            return {"items": [], "errors": []}
        current = source.current()
        return {
            "items": [agent.to_json() for agent in current.agents],
            "errors": list(source.last_errors),
            "directory": str(source.directory),
            "generation": current.generation,
        }

    return await run_in_threadpool(load)
