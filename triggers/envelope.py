"""The trigger payload envelope (SPEC §4): the webhook body in lowerCamelCase under `github`."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import orjson

# orjson reads integers past 64 bits as floats; such an integer has at least 20 digits.
# Mapping every digit to '0' and everything else to ' ' finds a run of 20 in C speed
# (a regex takes ten times as long on a 25 KB payload).
_DIGITS_ONLY = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_TWENTY_DIGITS = b"0" * 20


@lru_cache(maxsize=8192)
def camel(key: str) -> str:
    """`pull_request` → `pullRequest`, `html_url` → `htmlUrl`; leading underscores kept."""
    stripped = key.lstrip("_")
    lead = key[: len(key) - len(stripped)]
    if "_" not in stripped:
        return key
    head, *rest = stripped.split("_")
    return lead + head + "".join(part[:1].upper() + part[1:] for part in rest if part)


def camelize(value: Any) -> Any:
    """Every key at every depth through `camel`; values untouched.

    Recursive (fast) for ordinary payloads; a body nested deeper than the interpreter's
    stack allows goes through the iterative walk instead.
    """
    try:
        return _camelize(value)
    except RecursionError:
        return _camelize_deep(value)


#: JSON scalars: passed through as they are, without a call
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _camelize(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[camel(k)] = v if type(v) in _SCALARS else _camelize(v)
        return out
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else _camelize(v) for v in value]
    return value


def _camelize_deep(value: Any) -> Any:
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, parent, slot = stack.pop()
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            parent[slot] = out
            for k, v in node.items():
                out[camel(k)] = None
                stack.append((v, out, camel(k)))
        elif isinstance(node, list):
            items: list[Any] = [None] * len(node)
            parent[slot] = items
            stack.extend((v, items, i) for i, v in enumerate(node))
        else:
            parent[slot] = node
    return root[0]


def load_body(body: bytes) -> Any:
    """A recorded webhook body as JSON values, integers of any size kept exact (SPEC §4)."""
    if _TWENTY_DIGITS in body.translate(_DIGITS_ONLY):
        return json.loads(body)
    return orjson.loads(body)


def dump_json(value: Any) -> bytes:
    """JSON bytes of payload-derived data; integers past 64 bits (orjson refuses them) kept."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def build_envelope(event: str, delivery_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """`{"github": {"event", "deliveryId", ...body in lowerCamelCase}}`."""
    github: dict[str, Any] = camelize(body)
    github["event"] = event
    github["deliveryId"] = delivery_id
    return {"github": github}


def session_input(delivery_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
    """The stored input of a trigger-spawned session (what ref templates render against)."""
    return {"triggerEventId": delivery_id, "payload": envelope}
