"""POST /webhooks/github: verify, record durably (dedup on X-GitHub-Delivery), enqueue, answer.

The one hot path of the web process, answered straight from ASGI (`HookspawnApp` hands it
every request for this path before its middleware and router): the headers it needs picked
from the scope, the body read with its cap, the pure checks of `triggers.intake`, then the
record script on the event loop's `RecordPipe` (one write for every request of a pass of the
loop), and a prebuilt answer. A 202 is sent only after Redis answered that the delivery is
recorded, pending and queued.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
import redis
import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from starlette.types import Message, Receive, Scope, Send

from hookspawn.web import http_errors
from hookspawn.web.error_models import errors
from hookspawn.web.routes.metrics import WebMetrics, count_intake, web_metrics
from hookspawn.web.routes.models import IntakeAnswer, Queued
from triggers.errors import InvalidSignature, PayloadTooLarge
from triggers.intake import MAX_BODY, ParsedDelivery, check_size, parse_delivery
from workers.delivery.record import NewDelivery
from workers.delivery.record_pipe import RecordPipe, supports
from workers.delivery.scripts import RECORD, Arg
from workers.errors import WorkerError
from workers.redis_connection import async_redis_client
from workers.runtime import Runtime

log = logging.getLogger(__name__)

PATH = "/webhooks/github"

#: the request headers intake reads (ASGI gives header names in lower case)
_WANTED = frozenset(
    {
        b"content-length",
        b"content-type",
        b"x-hub-signature-256",
        b"x-github-event",
        b"x-github-delivery",
        b"x-github-hook-id",
    }
)
_JSON = (b"content-type", b"application/json")

#: the attribute of the app that holds its Recorder
_RECORDER = "_hookspawn_recorder"

#: declared here for the OpenAPI document; the app answers the path before routing
router = APIRouter()


class Disconnected(Exception):
    """The client went away before its body arrived: nobody is left to answer."""


def _headers(scope: Scope) -> dict[str, str]:
    """The headers intake reads, by lower-case name; the first of a repeated one."""
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name in _WANTED:
            found.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return found


async def _read_body(receive: Receive, content_length: str | None) -> bytes:
    """The raw body, refusing (413) as soon as it passes 25 MB without reading the rest."""
    check_size(content_length)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise PayloadTooLarge("body is over the 25 MB limit", limit=MAX_BODY)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class Recorder:
    """Records a delivery and queues its task in one atomic script, on this event loop:
    through a `RecordPipe` (group commit), or redis-py for a TLS Redis."""

    def __init__(self, rt: Runtime, *, metrics: WebMetrics, pipe: bool | None = None) -> None:
        """`pipe`: through a RecordPipe (by default, whenever it can reach the URL);
        `metrics`: where intake's answers are counted."""
        self.rt = rt
        self.secrets = rt.settings.webhook_secret
        self.metrics = metrics
        use_pipe = supports(rt.redis) if pipe is None else pipe
        self.pipe = RecordPipe(rt.redis, RECORD, ack=rt.ack) if use_pipe else None
        self.client: aioredis.Redis | None = None

    async def record(self, parsed: ParsedDelivery) -> bool:
        """True when new; False for a known delivery id (nothing written, nothing queued)."""
        keys_, args = self._call(parsed)
        if self.pipe is not None:
            return bool(await self.pipe.call(keys_, args))
        if self.client is None:
            self.client = async_redis_client(self.rt.redis)
        return await self.rt.store.arecord(self.client, keys_, args)

    def _call(self, parsed: ParsedDelivery) -> tuple[list[str], list[Arg]]:
        """The record script's KEYS and ARGV for `parsed`, its task message pushed with it."""
        messages = self.rt.task_messages
        new, message = NewDelivery.of(parsed), messages(parsed.delivery_id)
        return self.rt.store.record_call(new, queue=messages.queue, message=message)

    async def aclose(self) -> None:
        if self.pipe is not None:
            self.pipe.close()
        if self.client is not None:
            await self.client.aclose()


def recorder(app: FastAPI) -> Recorder:
    """The app's recorder, made on first use (inside the event loop that serves); kept as a
    plain attribute of the app, a cheaper lookup per request than `app.state`."""
    found: Recorder | None = app.__dict__.get(_RECORDER)
    if found is None:
        found = Recorder(app.state.runtime, metrics=web_metrics(app))
        setattr(app, _RECORDER, found)
    return found


async def close_recorder(app: FastAPI) -> None:
    """Close the app's recorder, if it made one: at the end of the app's lifespan."""
    found: Recorder | None = app.__dict__.pop(_RECORDER, None)
    if found is not None:
        await found.aclose()


async def intake(app: FastAPI, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer one POST /webhooks/github; count and time the answer."""
    started = time.perf_counter()
    headers = _headers(scope)
    recording = recorder(app)
    try:
        raw = await _read_body(receive, headers.get("content-length"))
        parsed = parse_delivery(headers, raw, recording.secrets)
        created = await recording.record(parsed)
    except Disconnected:
        return  # nothing was recorded
    except Exception as exc:
        await _refuse(recording.metrics, headers, started, exc, scope, receive, send)
        return
    status, body, answer = _answer(parsed, created)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [_JSON, (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})
    count_intake(recording.metrics, parsed.event, answer, started)


def _answer(parsed: ParsedDelivery, created: bool) -> tuple[int, bytes, str]:
    """The status and body of the answer to a recorded delivery, and the answer's name."""
    answer = "queued" if created else "duplicate"
    status = 202 if created and parsed.event != "ping" else 200
    return status, orjson.dumps({"deliveryId": parsed.delivery_id, "status": answer}), answer


async def _refuse(
    metrics: WebMetrics,
    headers: dict[str, str],
    started: float,
    exc: Exception,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """Answer, count and (for what no client caused) log a request intake did not record."""
    status = http_errors.status_of(exc)
    if status >= 500 and not isinstance(exc, redis.RedisError | WorkerError):
        log.exception("intake failed", exc_info=exc)
    # refused before the signature was checked: its event header says nothing
    trusted = not isinstance(exc, PayloadTooLarge | InvalidSignature)
    event = headers.get("x-github-event", "") if trusted else ""
    count_intake(metrics, event, http_errors.code_of(exc), started)
    await http_errors.to_response(exc)(scope, receive, send)


class _Answer:
    """What `intake` sends, kept to be returned as a Response (the routed endpoint)."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    def response(self) -> Response:
        response = Response(self.body, status_code=self.status)
        response.raw_headers = self.headers
        return response


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
async def receive(request: Request) -> Any:
    """The same intake when reached through the router (an app mounting this router alone)."""
    answer = _Answer()
    await intake(request.app, request.scope, request.receive, answer)
    return answer.response()
