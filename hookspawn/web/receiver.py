"""POST /webhooks/github: verify, record durably (dedup on X-GitHub-Delivery), enqueue, answer."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from hookspawn.web.api_models import IntakeAnswer, Queued
from hookspawn.web.deps import async_redis, runtime
from hookspawn.web.error_models import errors
from hookspawn.web.routes_metrics import timed_intake
from triggers.errors import PayloadTooLarge
from triggers.intake import MAX_BODY, ParsedDelivery, check_size, parse_delivery
from workers.delivery.record import NewDelivery
from workers.runtime import Runtime

#: declared here for the OpenAPI document; requests for it go straight to `receive`
#: (`HookspawnApp` in hookspawn.web.api)
router = APIRouter()


async def read_capped(request: Request) -> bytes:
    """The raw body, refusing (413) as soon as it passes 25 MB without reading the rest."""
    check_size(request.headers.get("content-length"))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise PayloadTooLarge("body is over the 25 MB limit", limit=MAX_BODY)
        chunks.append(chunk)
    return b"".join(chunks)


async def record_and_enqueue(request: Request, rt: Runtime, parsed: ParsedDelivery) -> bool:
    """Record the delivery and queue its task in one atomic round trip.

    True when new; False for a duplicate delivery id (nothing written, nothing queued).
    """
    new = NewDelivery(
        delivery_id=parsed.delivery_id,
        event=parsed.event,
        action=parsed.action,
        repository=parsed.repository,
        installation_id=parsed.installation_id,
        hook_id=parsed.hook_id,
        body=parsed.json,
    )
    messages = rt.task_messages
    return await rt.store.arecord(
        async_redis(request),
        new,
        queue=messages.queue,
        message=messages(parsed.delivery_id),
    )


PATH = "/webhooks/github"


@router.post(
    PATH,
    status_code=202,
    responses={
        202: {"model": Queued, "description": "recorded and queued"},
        200: {
            "model": IntakeAnswer,
            "description": "duplicate delivery (already recorded), or a ping recorded",
        },
        **errors(
            {
                400: "invalid_header (a required header is missing or malformed, e.g. the "
                "delivery id) or invalid_body (the body is not the JSON it should be)",
                401: "invalid_signature: missing or bad X-Hub-Signature-256 (also when no "
                "secret is configured)",
                413: "payload_too_large: body over 25 MB",
                415: "unsupported_content_type: neither JSON nor form-encoded",
                503: "store_unavailable: the delivery could not be recorded durably",
            }
        ),
    },
)
@timed_intake
async def receive(request: Request) -> JSONResponse:
    rt = runtime(request)
    raw = await read_capped(request)
    headers = {k.lower(): v for k, v in request.headers.items()}
    parsed = parse_delivery(headers, raw, rt.settings.webhook_secret)
    created = await record_and_enqueue(request, rt, parsed)
    if not created:
        return JSONResponse({"deliveryId": parsed.delivery_id, "status": "duplicate"}, 200)
    status = 200 if parsed.event == "ping" else 202
    return JSONResponse({"deliveryId": parsed.delivery_id, "status": "queued"}, status)
