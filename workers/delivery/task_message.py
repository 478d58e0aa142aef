"""The Celery message for `process_delivery(delivery_id)`: the one way a delivery is queued.

Intake pushes it onto the broker list inside the same atomic Redis script that records
the delivery, so a 202 costs one round trip and a recorded delivery is always queued;
replay and the sweep push the same message (`Runtime.enqueue`); recover asks GitHub to
redeliver, which comes back through intake. It is exactly what `celery.send_task` puts on a
Redis list (Celery protocol 2, kombu's Redis transport); tests/workers/delivery/test_task_message.py
compares the two field by field.
"""

from __future__ import annotations

import base64
import os

import orjson

_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
_EMBED_JSON = orjson.dumps(_EMBED)


def _uuid4s() -> tuple[str, str]:
    """Two random (version 4) UUIDs' text, as `str(uuid.uuid4())` writes it, from one read
    of the system's randomness and without UUID objects (a sixth of the time)."""
    raw = bytearray(os.urandom(32))
    for at in (0, 16):
        raw[at + 6] = (raw[at + 6] & 0x0F) | 0x40  # version 4
        raw[at + 8] = (raw[at + 8] & 0x3F) | 0x80  # RFC 4122 variant
    x = raw.hex()
    first = f"{x[0:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}"
    return first, f"{x[32:40]}-{x[40:44]}-{x[44:48]}-{x[48:52]}-{x[52:64]}"


#: what changes from one message to the next, and how often each is in a message
_CHANGING = {"body": 1, "task_id": 3, "argsrepr": 1, "tag": 1}


class TaskMessages:
    """Builds the broker message of one task call, for one task name and queue.

    The message is written once, with stand-ins for the four things that change from one
    call to the next, as a template they are filled into (a third of the time of writing
    the whole document each time); `message` writes it whole, and a test keeps the two the
    same byte for byte.
    """

    def __init__(self, *, task: str, queue: str, origin: str, reply_to: str) -> None:
        self.task = task
        self.queue = queue
        self.origin = origin
        self.reply_to = reply_to
        marks = {name: f"@@{name}@@" for name in _CHANGING}
        template = self.message(**marks).replace(b"%", b"%%")
        for name, mark in marks.items():
            quoted = orjson.dumps(mark)
            if template.count(quoted) != _CHANGING[name]:
                raise ValueError(f"the task message's {name} cannot be templated: {mark} recurs")
            template = template.replace(quoted, b"%%(%s)s" % name.encode())
        self._template = template

    def __call__(self, delivery_id: str) -> bytes:
        task_id, tag = _uuid4s()
        body = b"[[%s],{},%s]" % (orjson.dumps(delivery_id), _EMBED_JSON)
        return self._template % {
            b"body": b'"%s"' % base64.b64encode(body),
            b"task_id": orjson.dumps(task_id),
            b"argsrepr": orjson.dumps(repr([delivery_id])),
            b"tag": orjson.dumps(tag),
        }

    def message(self, *, body: str, task_id: str, argsrepr: str, tag: str) -> bytes:
        """The whole message, written field by field: what the template is made from."""
        return orjson.dumps(
            {
                "body": body,
                "content-encoding": "utf-8",
                "content-type": "application/json",
                "headers": {
                    "lang": "py",
                    "task": self.task,
                    "id": task_id,
                    "shadow": None,
                    "eta": None,
                    "expires": None,
                    "group": None,
                    "group_index": None,
                    "retries": 0,
                    "timelimit": [None, None],
                    "root_id": task_id,
                    "parent_id": None,
                    "argsrepr": argsrepr,
                    "kwargsrepr": "{}",
                    "origin": self.origin,
                    "ignore_result": None,
                    "replaced_task_nesting": 0,
                    "stamped_headers": None,
                    "stamps": {},
                },
                "properties": {
                    "correlation_id": task_id,
                    "reply_to": self.reply_to,
                    "delivery_mode": 2,
                    "delivery_info": {"exchange": "", "routing_key": self.queue},
                    "priority": 0,
                    "body_encoding": "base64",
                    "delivery_tag": tag,
                },
            }
        )
