"""The one nesting limit intake and worker share: exact, iterative, cheap for ordinary bodies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.conftest import SECRET
from triggers.envelope import envelope_view, plain
from triggers.errors import InvalidBody
from triggers.intake import parse_delivery
from triggers.json_codec import MAX_DEPTH, TooDeep, check_depth, load_body, load_checked_body
from triggers.signature import sign


def nested(depth: int, *, lists: bool = False) -> bytes:
    """A document `depth` containers deep, objects and arrays alternating when `lists`."""
    opens = [b"[" if lists and i % 2 else b'{"k":' for i in range(depth)]
    closes = [b"]" if lists and i % 2 else b"}" for i in reversed(range(depth))]
    return b"".join(opens) + b"1" + b"".join(closes)


@pytest.mark.parametrize("lists", [False, True])
def test_the_limit_is_exact(lists: bool) -> None:
    at_limit = nested(MAX_DEPTH, lists=lists)
    check_depth(at_limit, orjson.loads(at_limit))
    over = nested(MAX_DEPTH + 1, lists=lists)
    with pytest.raises(TooDeep, match=f"nested deeper than {MAX_DEPTH} levels"):
        check_depth(over, orjson.loads(over))


def test_brackets_inside_strings_do_not_count() -> None:
    raw = orjson.dumps({"title": "{[" * 5000, "list": [[1], [2]]})
    check_depth(raw, orjson.loads(raw))  # many brackets, three levels


def test_scalars_and_shallow_wide_documents_pass() -> None:
    check_depth(b"1", 1)
    wide: dict[str, Any] = {f"k{i}": {"v": [i]} for i in range(5000)}
    raw = orjson.dumps(wide)
    check_depth(raw, wide)


def test_everything_built_around_an_accepted_body_can_be_written() -> None:
    """The envelope and the session spec around the deepest body intake accepts stay within
    orjson's own limit (what the worker writes them with)."""
    raw = nested(MAX_DEPTH)
    body = orjson.loads(raw)
    envelope = envelope_view("push", "d-1", body)
    spec = {"input": {"triggerEventId": "d-1", "payload": envelope}}
    assert orjson.loads(orjson.dumps(plain(spec)))["input"]["payload"]["github"]["k"]["k"]


def test_intake_refuses_a_deeper_body_with_a_clear_error() -> None:
    raw = nested(MAX_DEPTH + 1)
    headers = {
        "x-hub-signature-256": sign(raw, SECRET),
        "x-github-event": "push",
        "x-github-delivery": "d-deep",
        "content-type": "application/json",
    }
    with pytest.raises(InvalidBody) as refused:
        parse_delivery(headers, raw, [SECRET])
    assert refused.value.message == f"body is JSON nested deeper than {MAX_DEPTH} levels " + (
        f"(at most {MAX_DEPTH} allowed)"
    )
    assert refused.value.details == {"limit": MAX_DEPTH}
    parse_delivery(
        headers | {"x-hub-signature-256": sign(nested(MAX_DEPTH), SECRET)},
        nested(MAX_DEPTH),
        [SECRET],
    )


@pytest.mark.parametrize(
    "raw",
    [
        b'{"action": "opened", "number": 7}',
        b'{"id": 123456789012345678901234567890, "small": 18446744073709551615}',
        b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
        b"[" + b"[]," * 300 + b"[]]",
        b'{"s": "[[[[{{{{ 1234567890123456789 not a number"}',
    ],
    ids=["plain", "big-integers", "at-the-limit", "wide-not-deep", "brackets-in-strings"],
)
def test_the_workers_one_pass_reads_what_load_and_check_read(raw: bytes) -> None:
    value = load_body(raw)
    check_depth(raw, value)
    assert load_checked_body(raw) == value


def test_the_workers_one_pass_refuses_what_is_too_deep() -> None:
    raw = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    with pytest.raises(TooDeep):
        load_checked_body(raw)
