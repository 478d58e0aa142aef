"""The one builder of a delivery's task message: what Celery's send_task publishes, and what
intake, replay and the sweep all push."""

from __future__ import annotations

import base64
import json
from typing import Any
from unittest.mock import patch

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import make_settings
from workers.celery_app import PROCESS_DELIVERY
from workers.delivery import task_message
from workers.delivery.task_message import TaskMessages
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


@settings(max_examples=200, deadline=None)
@given(delivery_id=st.text(max_size=70), origin=st.text(max_size=20))
def test_the_template_writes_what_the_whole_message_would(delivery_id: str, origin: str) -> None:
    """Byte for byte, whatever the id and the origin (quotes, `%`, any character)."""
    try:
        messages = TaskMessages(task="t.process", queue="q", origin=origin, reply_to="r%s")
    except ValueError:
        assert "@@" in origin  # a stand-in in the origin itself: refused, never misfilled
        return
    ids = ("0a4c4e52-4f3e-4b9b-9a57-1d1e6f1f0c11", "7f9c2b1e-8d3a-4c5e-b6f7-0e1d2c3b4a59")
    with patch.object(task_message, "_uuid4s", lambda: ids):
        built = messages(delivery_id)
    body = base64.b64encode(orjson.dumps([[delivery_id], {}, task_message._EMBED])).decode()
    whole = messages.message(body=body, task_id=ids[0], argsrepr=repr([delivery_id]), tag=ids[1])
    assert built == whole


def test_a_stand_in_in_a_fixed_part_is_refused() -> None:
    with pytest.raises(ValueError, match="task_id cannot be templated"):
        TaskMessages(task="@@task_id@@", queue="q", origin="o", reply_to="r")
