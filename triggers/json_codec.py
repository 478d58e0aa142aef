"""JSON in and out of payloads: exact big integers on read, a nesting limit, views on write."""

from __future__ import annotations

import json
from typing import Any

import orjson

from triggers.errors import TriggersError

# orjson reads integers outside [-2**63, 2**64 - 1] as floats; such an integer has at least
# 19 digits (-9223372036854775809 has 19). Mapping every digit to '0' and everything else to
# ' ' finds a run of 19 in C speed (a regex takes ten times as long on a 25 KB payload).
_DIGITS_ONLY = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_DIGITS = b"0" * 19


class JsonView:
    """A JSON value built on demand: `dump_json` writes what `materialize` gives."""

    __slots__ = ()

    def materialize(self) -> Any:
        raise NotImplementedError


#: how deep a webhook body may nest (arrays and objects; GitHub's own go about ten levels).
#: Intake refuses deeper bodies and the worker checks the same limit, so every document built
#: around an accepted body (envelope, session input, spec: three levels more) stays within
#: what everything that handles it takes: orjson writes at most 254 levels, Python's
#: recursion limit is 1000.
MAX_DEPTH = 200


class TooDeep(TriggersError, ValueError):
    """A JSON document nested deeper than MAX_DEPTH."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels (at most {limit} allowed)")
        self.limit = limit


_CONTAINERS = (dict, list)


#: every byte but the two that open an array or an object (deleted, the rest are counted)
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{")


def openings(raw: bytes) -> int:
    """How many `[` and `{` bytes `raw` holds (those inside strings too): a bound on how many
    arrays and objects it opens, found in one pass at C speed."""
    return len(raw.translate(None, _NOT_OPENING))


def check_depth(raw: bytes, value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise TooDeep when `value` (parsed from `raw`) nests more than `limit` arrays/objects.

    Iterative, never recursive. A body with at most `limit` brackets cannot nest deeper than
    that: counted at C speed, that settles every ordinary payload without a walk.
    """
    if openings(raw) <= limit:
        return
    _walk_depth(value, limit)


def _walk_depth(value: Any, limit: int) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, _CONTAINERS) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise TooDeep(limit)
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if type(child) in _CONTAINERS)


def load_body(body: bytes) -> Any:
    """A recorded webhook body as JSON values, integers of any size kept exact."""
    if _LONG_DIGITS in body.translate(_DIGITS_ONLY):
        return json.loads(body)
    return orjson.loads(body)


# digits → '0', an opening bracket → '{', every other byte → ' ': one pass over a body tells
# both whether it holds a 19-digit run and how many arrays and objects it opens
_SHAPE = bytes(
    0x30 if 0x30 <= i <= 0x39 else 0x7B if i in (0x5B, 0x7B) else 0x20 for i in range(256)
)


def load_checked_body(body: bytes, limit: int = MAX_DEPTH) -> Any:
    """`load_body`, raising TooDeep as `check_depth` does, from one pass over the bytes
    (instead of one for the integers and two for the brackets)."""
    shape = body.translate(_SHAPE)
    value = json.loads(body) if _LONG_DIGITS in shape else orjson.loads(body)
    if shape.count(b"{") > limit:
        _walk_depth(value, limit)
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, JsonView):
        return value.materialize()
    raise TypeError(f"{type(value).__name__} is not JSON")


def dump_json(value: Any) -> bytes:
    """JSON bytes of payload-derived data (envelope views, any `JsonView`, included); integers
    past 64 bits (orjson refuses them) kept."""
    try:
        return orjson.dumps(value, default=_json_default)
    except TypeError:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_json_default)
        return text.encode()
