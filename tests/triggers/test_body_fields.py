"""Intake's reading of a body: simdjson's where it cannot differ, orjson's everywhere else."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triggers.body_fields import BodyFields, _read_checked, _read_parsed, read_fields
from triggers.errors import InvalidBody
from triggers.json_codec import MAX_DEPTH

WEBHOOKS = Path(__file__).resolve().parents[1] / "webhooks"


def outcome(read: object, document: bytes) -> BodyFields | str:
    """The fields read, or the refusal's message."""
    try:
        return read(document)  # type: ignore[operator,no-any-return]
    except InvalidBody as refused:
        return refused.message


@pytest.mark.parametrize(
    "path", sorted(WEBHOOKS.glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_every_real_payload_is_read_by_simdjson_and_as_orjson_reads_it(path: Path) -> None:
    document = path.read_bytes()
    fast = _read_checked(document)
    assert fast is not None, "an ordinary payload fell back to the full parse"
    assert fast == _read_parsed(document) == read_fields(document)


def test_the_fields_kept_and_their_types() -> None:
    body = {"action": "opened", "repository": {"full_name": "o/r"}, "installation": {"id": 7}}
    assert read_fields(orjson.dumps(body)) == ("opened", "o/r", 7)
    odd = {"action": 1, "repository": {"full_name": ["o/r"]}, "installation": {"id": True}}
    assert read_fields(orjson.dumps(odd)) == (None, None, None)
    assert read_fields(b'{"repository": "o/r", "installation": 7}') == (None, None, None)
    assert read_fields(b'{"installation": {"id": 1.0}}') == (None, None, None)


@pytest.mark.parametrize(
    ("document", "fields"),
    [
        (b'{"action": "opened", "action": "closed"}', ("closed", None, None)),
        (b'{"repository": {"full_name": "a/b"}, "repository": {"full_name": "c/d"}}',
         (None, "c/d", None)),
        (b'{"repository": {"full_name": "a/b", "id": 1, "full_name": "c/d"}}', (None, "c/d", None)),
        (b'{"installation": {"id": 1, "id": 2}}', (None, None, 2)),
    ],
)  # fmt: skip
def test_a_repeated_key_is_read_as_orjson_reads_it_the_last(
    document: bytes, fields: tuple[object, ...]
) -> None:
    assert _read_checked(document) is None
    assert read_fields(document) == fields


def test_an_integer_past_64_bits_is_read_as_orjson_reads_it() -> None:
    document = b'{"installation": {"id": 123456789012345678901234567890}, "action": "x"}'
    assert read_fields(document) == ("x", None, None)  # orjson: a float, so no installation
    assert read_fields(b'{"installation": {"id": 18446744073709551615}}').installation_id == (
        2**64 - 1
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b'\xef\xbb\xbf{"action": "opened"}', "body is not JSON: "),
        (b'{"a": 1e999}', "body is not JSON: "),
        (b'{"a": "\\ud800"}', "body is not JSON: "),
        (b'{"a": "\xff"}', "body is not UTF-8: byte 7 is invalid"),
        (b'{"a": "\xed\xa0\x80"}', "body is not UTF-8: byte 7 is invalid"),
        (b'{"a": 1}\x00', "body is not JSON: "),
        (b'{"a": [1,]}', "body is not JSON: "),
        (b"", "body is not JSON: "),
        (b"[1, 2]", "body is JSON list, not an object"),
        (b'"text"', "body is JSON str, not an object"),
        (b"{" * (MAX_DEPTH + 1), "body is not JSON: "),
    ],
)
def test_refusals_say_what_orjson_says(document: bytes, message: str) -> None:
    with pytest.raises(InvalidBody) as refused:
        read_fields(document)
    assert refused.value.message.startswith(message)


def test_the_nesting_limit_holds_either_way() -> None:
    at_limit = b'{"a":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
    assert read_fields(at_limit) == (None, None, None)
    over = b'{"a":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"
    with pytest.raises(InvalidBody) as refused:
        read_fields(over)
    assert refused.value.details == {"limit": MAX_DEPTH}
    # brackets in strings count towards the fast reader's bound, not towards the nesting
    wide = orjson.dumps({"title": "[" * 1000, "action": "opened"})
    assert _read_checked(wide) is None
    assert read_fields(wide) == ("opened", None, None)


# JSON values with the fields intake reads, of every type, and keys that may repeat
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
names = st.sampled_from(["action", "repository", "installation", "full_name", "id", "x"])


def members(values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pairs = st.lists(st.tuples(names, values), max_size=5)
    return pairs.map(lambda kv: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in kv) + "}")


values = st.recursive(
    scalars.map(json.dumps),
    lambda inner: members(inner) | st.lists(inner, max_size=4).map(lambda v: f"[{','.join(v)}]"),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(members(values))
def test_any_object_reads_as_orjson_reads_it(document: str) -> None:
    raw = document.encode()
    assert outcome(read_fields, raw) == outcome(_read_parsed, raw)


@settings(max_examples=400, deadline=None)
@given(members(values), st.data())
def test_any_damaged_object_reads_or_is_refused_as_by_orjson(
    document: str, data: st.DataObject
) -> None:
    raw = bytearray(document.encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw)))
        raw[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    assert outcome(read_fields, bytes(raw)) == outcome(_read_parsed, bytes(raw))
