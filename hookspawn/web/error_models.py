"""The JSON API's one error body as pydantic models, and the failure tables that document it.

What each route declares as `responses=` for its 4xx and 5xx answers in the OpenAPI document,
and the rewrite of the generated 422s to the shared body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ADMIN",
    "STORE",
    "UNPARSEABLE",
    "ErrorBody",
    "ErrorDetail",
    "document_validation_errors",
    "errors",
]


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, description="machine-readable, e.g. delivery_not_found")
    message: str = Field(min_length=1, description="what was wrong and where, for a person")
    details: dict[str, Any] = Field(description="the fields the code names (may be empty)")


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer of the JSON API: `{"error": {"code", "message", "details"}}`."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorDetail


#: the admin token check on every admin router
ADMIN = {401: "unauthorized: HOOKSPAWN_ADMIN_TOKEN is set and the request does not carry it"}
#: any route that reads or writes Redis
STORE = {503: "store_unavailable: the store (Redis) is unreachable"}
#: a JSON body the framework cannot parse (not UTF-8, not JSON)
UNPARSEABLE = {400: "invalid_request: the body could not be parsed"}


def errors(*tables: Mapping[int, str]) -> dict[int | str, dict[str, Any]]:
    """`responses=` entries: each status answers the shared error body, with its description."""
    merged: dict[int, str] = {}
    for table in tables:
        merged.update(table)
    return {
        status: {"model": ErrorBody, "description": text} for status, text in sorted(merged.items())
    }


#: a state-changing admin route reached with the /ui cookie from another origin
CROSS_ORIGIN = (
    "cross_origin_request: the /ui cookie authenticated a request that changes state and did "
    "not come from this server's own pages"
)
#: every request for a host this server does not answer to, before any route (host_check.py)
MISDIRECTED = (
    "misdirected_request: the request's Host is not one this server answers to (loopback, "
    "the bound host, HOOKSPAWN_PUBLIC_URL's host, HOOKSPAWN_ALLOWED_HOSTS)"
)
#: the methods that change nothing, so are never refused for their origin
_SAFE = frozenset({"get", "head", "options"})

VALIDATION = (
    "invalid_request: the request does not match this document; details.errors lists each "
    "problem as {loc, message}"
)


def document_validation_errors(document: dict[str, Any]) -> dict[str, Any]:
    """Make every generated 422 say what the app answers: the shared error body, not `detail`.

    FastAPI documents request validation as `{"detail": [...]}` (HTTPValidationError); the
    app's handler (`http_errors.install`) answers `{"error": {...}}` with code invalid_request.
    """
    generated = "#/components/schemas/HTTPValidationError"
    shared = {"$ref": "#/components/schemas/ErrorBody"}
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            answer = operation.get("responses", {}).get("422")
            if answer is None:
                continue
            content = answer.get("content", {}).get("application/json", {})
            if content.get("schema", {}).get("$ref") == generated:
                answer["description"] = VALIDATION
                content["schema"] = dict(shared)
    _document_origin_check(document)
    _document_host_check(document)
    components = document.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    if "ErrorBody" not in components:  # every admin route declares it: only a safety net
        schema = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(schema.pop("$defs", {}), ErrorBody=schema)
    return document


def _document_origin_check(document: dict[str, Any]) -> None:
    """Every admin route that changes state (its 401 is the admin token's) also answers 403
    cross_origin_request: added to the route's 403 when it has one of its own."""
    for operations in document.get("paths", {}).values():
        for method, operation in operations.items():
            responses = operation.get("responses", {})
            if method in _SAFE or responses.get("401", {}).get("description") != ADMIN[401]:
                continue
            own = responses.get("403")
            if own is None:
                responses["403"] = {
                    "description": CROSS_ORIGIN,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
                    },
                }
            elif "cross_origin_request" not in own.get("description", ""):
                own["description"] = f"{own['description']}; or {CROSS_ORIGIN}"


def _document_host_check(document: dict[str, Any]) -> None:
    """Every operation may answer 421 misdirected_request: the Host check runs before all."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            operation.setdefault("responses", {})["421"] = {
                "description": MISDIRECTED,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
                },
            }
