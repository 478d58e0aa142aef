"""A connection's writes of one pass of the event loop, sent in one write.

uvicorn writes a response's status line and headers when the app sends its start, and the
body when it sends the body: two system calls for every small answer (a webhook's 202, a
health check), each costing about as much as the rest of the answer. Each connection of
`hookspawn web` (hookspawn/web/server/limits.py) writes through this wrapper: the writes made while
one callback of the event loop runs are joined and written at the end of it; anything that
ends or checks the stream (close, write_eof, abort, the buffer size) sends what is pending
first, and a write that makes the pending bytes large goes out at once. Once the stream is
ended (a refused connection, lingering), what is written is dropped.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: pending bytes past which a write goes out at once instead of waiting for the flush
FLUSH_AT = 64 * 1024


class CoalescingTransport:
    """Wraps a transport: `write`s of one event-loop pass go out as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0
        #: the stream was ended (write_eof): what is written after is dropped
        self._ended = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data or self._ended:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._size >= FLUSH_AT:
            self.flush()

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write what is pending now (nothing when the transport is closing)."""
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def write_eof(self) -> None:
        self.flush()
        self._ended = True
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:  # asked after every response: spared the __getattr__ hop
        return self._transport.is_closing()

    def abort(self) -> None:
        self._pending.clear()
        self._size = 0
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._size + self._transport.get_write_buffer_size()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
