"""Liveness and readiness: GET /healthz, GET /readyz (store and broker reachable)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import runtime
from hookspawn.web.routes.models import Health, Readiness

router = APIRouter()


@router.get("/healthz", response_model=Health)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={
        200: {"model": Readiness, "description": "the store and the broker are reachable"},
        503: {"model": Readiness, "description": "not ready: which of them is unreachable"},
    },
)
async def readyz(request: Request) -> JSONResponse:
    rt = runtime(request)

    def probe() -> dict[str, str]:
        checks: dict[str, str] = {}
        try:
            rt.client.ping()
            checks["store"] = "ok"
        except Exception as exc:
            checks["store"] = f"unreachable: {exc}"
        try:
            with rt.celery.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            checks["broker"] = "ok"
        except Exception as exc:
            checks["broker"] = f"unreachable: {exc}"
        return checks

    checks = await run_in_threadpool(probe)
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if ok else "unavailable", **checks}, 200 if ok else 503)
