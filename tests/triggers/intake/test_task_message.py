"""The one builder of a delivery's task message: what Celery's send_task publishes, and what
intake, replay and the sweep all push."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.conftest import make_settings
from workers.celery_app import PROCESS_DELIVERY
from workers.runtime import build_runtime

IDS = ("id", "root_id", "correlation_id", "delivery_tag")


def normalised(raw: bytes) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(raw)
    message["body"] = json.loads(base64.b64decode(message["body"]))
    for part in (message["headers"], message["properties"]):
        for key in IDS:
            if key in part:
                part[key] = "<id>"
    return message


def test_prebuilt_message_matches_send_task(redis_url: str) -> None:
    rt = build_runtime(make_settings(redis_url=redis_url))
    queue = rt.task_messages.queue
    rt.celery.send_task(PROCESS_DELIVERY, args=["d-1"])
    sent = rt.client.rpop(queue)
    assert isinstance(sent, bytes)
    built = rt.task_messages("d-1")
    assert normalised(built) == normalised(sent)
    first, second = json.loads(rt.task_messages("d-2")), json.loads(rt.task_messages("d-2"))
    assert first["headers"]["id"] != second["headers"]["id"]
    rt.close()


def test_enqueue_pushes_the_builders_message(redis_url: str) -> None:
    """Replay and the sweep (`Runtime.enqueue`) queue the very message intake records with."""
    rt = build_runtime(make_settings(redis_url=redis_url))
    queue = rt.task_messages.queue
    rt.enqueue("d-3")
    pushed = rt.client.rpop(queue)
    assert isinstance(pushed, bytes)
    assert normalised(pushed) == normalised(rt.task_messages("d-3"))
    assert rt.client.llen(queue) == 0
    rt.close()
