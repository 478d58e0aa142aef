"""Where one webhook's CPU goes in `hookspawn web`: each step of intake timed on its own.

Each step runs in this process on the bench's body, many times over, timed with
`time.process_time()` (CPU, not wall time, so a busy machine inflates it less): the
signature check, parsing (headers; the JSON checked, three fields read), packing the body,
building the record script's arguments and the Celery message, and the Redis round trip as
intake makes it (`RecordPipe.call` on uvloop, 50 calls in flight at once, this process's
CPU per call). What the server spent per request under wrk, less the sum of these, is the
HTTP server around them (uvicorn, httptools, the connection limits, the answer, asyncio).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import uvloop

from triggers.body_codec import pack
from triggers.intake import parse_delivery
from triggers.signature import sign, verify
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import NewDelivery
from workers.delivery.record_pipe import RecordPipe
from workers.delivery.scripts import RECORD
from workers.delivery.task_message import TaskMessages


@dataclass(frozen=True)
class Step:
    name: str
    micros: float


def per_call(fn: Callable[[], object], seconds: float = 1.0) -> float:
    """CPU microseconds per call of `fn`, over about `seconds` of calls."""
    fn()
    calls, spent = 0, 0.0
    start = time.process_time()
    while spent < seconds:
        for _ in range(200):
            fn()
        calls += 200
        spent = time.process_time() - start
    return spent / calls * 1e6


def breakdown(body: bytes, secret: str, redis_url: str, store: DeliveryStore) -> list[Step]:
    signature = sign(body, secret)
    headers = {
        "content-type": "application/json",
        "x-github-event": "pull_request",
        "x-github-delivery": "breakdown-1",
        "x-github-hook-id": "42",
        "x-hub-signature-256": signature,
    }
    secrets = [secret]
    verify_us = per_call(lambda: verify(body, signature, secrets))
    parse_us = per_call(lambda: parse_delivery(headers, body, secrets)) - verify_us
    pack_us = per_call(lambda: pack(body))
    messages = TaskMessages(task="t", queue="hookspawn", origin="o", reply_to="r")
    parsed = parse_delivery(headers, body, secrets)

    def args() -> object:
        new = NewDelivery.of(parsed)
        return store.record_call(new, queue="hookspawn", message=messages(parsed.delivery_id))

    args_us = per_call(args) - pack_us
    redis_us = _round_trip(redis_url, store, parsed.json)
    return [
        Step("verify (HMAC-SHA256 of the body)", verify_us),
        Step("parse (headers; JSON checked, 3 fields read)", parse_us),
        Step("pack the body (LZ4)", pack_us),
        Step("record arguments + Celery message", args_us),
        Step("Redis round trip (RecordPipe.call, 50 in flight)", redis_us),
    ]


def _round_trip(redis_url: str, store: DeliveryStore, body: bytes, calls: int = 20_000) -> float:
    """This process's CPU per record call through a RecordPipe as intake makes it (`call`,
    awaited, on uvloop), 50 calls in flight at once (each a new delivery id;
    the arguments are built before the clock starts)."""
    messages = TaskMessages(task="t", queue="breakdown", origin="o", reply_to="r")
    prepared = []
    for i in range(calls):
        new = NewDelivery(
            delivery_id=f"breakdown-{i}",
            event="pull_request",
            action="opened",
            repository="Codertocat/Hello-World",
            installation_id=1,
            hook_id="42",
            body=body,
        )
        prepared.append(store.record_call(new, queue="breakdown", message=messages(str(i))))

    async def run() -> float:
        pipe = RecordPipe(redis_url, RECORD)
        try:
            await pipe.call(*prepared[0])
            calls_left = iter(prepared[1:])

            async def caller() -> None:
                # as a request of intake: each answer sends the next one
                for call in calls_left:
                    await pipe.call(*call)

            start = time.process_time()
            await asyncio.gather(*(caller() for _ in range(50)))
            return (time.process_time() - start) / (calls - 1) * 1e6
        finally:
            pipe.close()

    return uvloop.run(run())


def report(steps: list[Step], server_us: float | None) -> None:
    print("\nwhere a request's CPU goes in the server (µs per request):")
    for step in steps:
        print(f"  {step.name:<48} {step.micros:7.1f}")
    total = sum(s.micros for s in steps)
    print(f"  {'sum of the steps':<48} {total:7.1f}")
    if server_us is not None:
        print(f"  {'server CPU per request under wrk':<48} {server_us:7.1f}")
        print(f"  {'the rest: HTTP server, answer, asyncio':<48} {server_us - total:7.1f}")
