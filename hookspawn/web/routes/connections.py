"""Connections: GET /connections (installations and what they cover), POST /connections/sync,
and manual connections: POST /connections, DELETE /connections/{owner}/{name}."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, UNPARSEABLE, errors
from hookspawn.web.routes.models import ConnectionList, SyncReportView
from workers.github.connections import ConnectionStore, run_sync
from workers.github.manual_connections import NAME_PATTERN, OWNER_PATTERN, REPOSITORY_PATTERN

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


def _not_a_boolean(value: object) -> object:
    """`true` is no installation id (pydantic would take it as 1)."""
    if isinstance(value, bool):
        raise ValueError("an installation id is a number, not a boolean")
    return value


def _not_dot_names(value: str) -> str:
    """A name of `.` or `..` is a path, not a repository (the pattern cannot say so)."""
    if value.partition("/")[2] in (".", ".."):
        raise ValueError(f"{value!r}: a repository name is not '.' or '..'")
    return value


class ManualConnectionBody(BaseModel):
    """A repository to cover without a GitHub App installation (for trying agents out)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    repository: Annotated[str, AfterValidator(_not_dot_names)] = Field(
        pattern=REPOSITORY_PATTERN, description="OWNER/NAME (the name is not `.` or `..`)"
    )
    installation_id: Annotated[int | None, BeforeValidator(_not_a_boolean)] = Field(
        default=None,
        alias="installationId",
        ge=0,
        le=2**53,
        description="record it under this installation id (default 0: no installation)",
    )


@router.post(
    "/connections",
    status_code=201,
    response_model=ConnectionList,
    response_model_exclude_unset=True,
    responses=errors(
        {
            409: "installation_exists: the id is an installation GitHub told the project about",
        },
        UNPARSEABLE,
    ),
)
async def add_connection(request: Request, body: ManualConnectionBody) -> dict[str, Any]:
    """Record a manual connection covering `repository`: 201 with the connections changed."""
    store = ConnectionStore(runtime(request).client)

    def add() -> dict[str, Any]:
        change = store.add_manual(body.repository, body.installation_id)
        touched = {body.installation_id or 0} | change.installations
        found = [store.get(i) for i in sorted(touched)]
        return {"items": [i.to_json() for i in found if i is not None]}

    return await run_in_threadpool(add)


@router.delete(
    "/connections/{owner}/{name}",
    response_model=ConnectionList,
    response_model_exclude_unset=True,
    responses=errors({404: "connection_not_found: no manual connection covers it"}),
)
async def remove_connection(
    request: Request,
    owner: Annotated[str, Path(pattern=OWNER_PATTERN)],
    name: Annotated[str, Path(pattern=NAME_PATTERN)],
) -> dict[str, Any]:
    """End the manual connections' coverage of owner/name: 200 with what is left of them."""
    store = ConnectionStore(runtime(request).client)

    def remove() -> dict[str, Any]:
        change = store.remove_manual(f"{owner}/{name}")
        found = [store.get(i) for i in sorted(change.installations)]
        return {"items": [i.to_json() for i in found if i is not None]}

    return await run_in_threadpool(remove)
