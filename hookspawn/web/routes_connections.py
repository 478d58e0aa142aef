"""Connections: GET /connections (installations and what they cover), POST /connections/sync."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from hookspawn.web.api_models import ConnectionList, SyncReportView
from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, errors
from workers.connections import run_sync

router = APIRouter(dependencies=[Depends(require_admin)], responses=errors(ADMIN, STORE))


@router.get("/connections", response_model=ConnectionList, response_model_exclude_unset=True)
async def list_connections(request: Request) -> dict[str, Any]:
    store = runtime(request).connections
    installations = await run_in_threadpool(store.all)
    return {"items": [installation.to_json() for installation in installations]}


@router.post(
    "/connections/sync",
    response_model=SyncReportView,
    response_model_exclude_unset=True,
    responses=errors(
        {
            400: "github_not_configured: no GitHub App credentials are configured",
            500: "configuration_error: GitHub refused the App's credentials",
            503: "store_unavailable, or github_unavailable: GitHub could not be reached",
        }
    ),
)
async def sync_connections(request: Request) -> dict[str, Any]:
    """Rebuild the store from the GitHub API: 400 github_not_configured, 503 github_unavailable."""
    rt = runtime(request)
    report = await run_in_threadpool(run_sync, rt.client, rt.settings)
    return report.to_json()
