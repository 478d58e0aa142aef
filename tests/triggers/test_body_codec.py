"""Packed payloads: what is packed comes back; what zlib packed before still reads."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from triggers.body_codec import pack, unpack


@given(st.binary(max_size=4096))
def test_what_is_packed_comes_back(data: bytes) -> None:
    assert unpack(pack(data)) == data


def test_a_body_is_packed_smaller_and_as_an_lz4_frame() -> None:
    body = b'{"action":"opened","repository":{"full_name":"octo/widgets"}}' * 200
    packed = pack(body)
    assert packed[:4] == b"\x04\x22\x4d\x18"
    assert len(packed) < len(body) // 10


@pytest.mark.parametrize("level", [1, 6, 9])
def test_bodies_stored_zlib_packed_before_are_still_read(level: int) -> None:
    body = b'{"action":"opened","number":7}'
    assert unpack(zlib.compress(body, level)) == body


def test_what_is_neither_is_refused() -> None:
    with pytest.raises(zlib.error):
        unpack(b"not packed at all")
