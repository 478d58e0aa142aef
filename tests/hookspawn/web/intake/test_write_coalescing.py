"""Writes of one event-loop pass go out as one; ending the stream sends what is pending."""

from __future__ import annotations

import asyncio
from typing import Any

from hookspawn.web.intake.write_coalescing import FLUSH_AT, CoalescingTransport


class Recording:
    """What a transport was asked to do, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", data))

    def write_eof(self) -> None:
        self.calls.append(("write_eof", None))

    def close(self) -> None:
        self.closing = True
        self.calls.append(("close", None))

    def abort(self) -> None:
        self.closing = True
        self.calls.append(("abort", None))

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def run(body: Any) -> list[tuple[str, Any]]:
    async def main() -> list[tuple[str, Any]]:
        recording = Recording()
        transport = CoalescingTransport(recording, asyncio.get_running_loop())  # type: ignore[arg-type]
        await body(transport)
        await asyncio.sleep(0)
        return recording.calls

    return asyncio.run(main())


def test_the_writes_of_one_pass_go_out_as_one() -> None:
    async def body(t: CoalescingTransport) -> None:
        t.write(b"HTTP/1.1 202 Accepted\r\n\r\n")
        t.write(bytearray(b'{"status":"queued"}'))
        await asyncio.sleep(0)
        t.write(b"next")

    assert run(body) == [
        ("write", b'HTTP/1.1 202 Accepted\r\n\r\n{"status":"queued"}'),
        ("write", b"next"),
    ]


def test_closing_or_ending_the_stream_sends_what_is_pending_first() -> None:
    """What is written after the end (an app answering a refused request) is dropped."""

    async def body(t: CoalescingTransport) -> None:
        t.write(b"refused")
        t.write_eof()
        t.write(b"late")
        t.close()

    assert run(body) == [("write", b"refused"), ("write_eof", None), ("close", None)]


def test_an_abort_drops_what_is_pending_and_nothing_is_written_once_closing() -> None:
    async def body(t: CoalescingTransport) -> None:
        t.write(b"dropped")
        t.abort()
        t.write(b"after the abort")

    assert run(body) == [("abort", None)]


def test_a_large_write_goes_out_at_once_and_other_calls_pass_through() -> None:
    async def body(t: CoalescingTransport) -> None:
        t.write(b"a" * 10)
        t.write(b"b" * FLUSH_AT)
        assert t.get_write_buffer_size() == 0
        assert t.get_extra_info("peername") == "info peername"

    assert run(body) == [("write", b"a" * 10 + b"b" * FLUSH_AT)]
