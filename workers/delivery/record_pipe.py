"""Intake's own Redis connection: every request's record script of one event-loop pass, sent
in one write (group commit), answered in order.

A webhook is answered 202 only once its record script has run (recorded, marked pending and
queued, atomically); that round trip is most of what intake waits for. Through redis-py each
call is a connection checkout, retry and timeout wrappers and a separate write, which cost
more CPU than everything else intake does. Here a request encodes its `EVALSHA` (RESP) and
hands it over; the first hand-over of a pass of the event loop schedules one flush at the end
of that pass, which writes every command handed over meanwhile; the answers are parsed as
they arrive and matched to their callers in order. Nothing is acknowledged early: each caller
still gets its own script's own answer, after Redis ran it.

- NOSCRIPT (the server lost its script cache): that call is sent again as `EVAL` with the
  script's text, which also caches it; a command refused with NOSCRIPT never ran.
- A lost connection, or an answer later than `timeout`: every call in flight fails with
  `RecordPipeError` (a `redis.ConnectionError`, answered 503 like any store error) and the
  connection is closed; the next call connects again. A call that failed this way may have
  run; the sender's redelivery is then a duplicate, which the script itself detects.
- TCP (`redis://`) and Unix sockets (`unix://`); `supports(url)` is False for TLS
  (`rediss://`), which intake then reaches through redis-py.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import hiredis
import redis
from redis.connection import SSLConnection, parse_url

__all__ = ["RecordPipe", "RecordPipeError", "encode_command", "supports"]

Arg = str | bytes | float | int


class RecordPipeError(redis.ConnectionError):
    """The delivery store could not be reached, or did not answer in time."""


class ReplyError(redis.ResponseError):
    """Redis answered a command with an error."""


class _NotResp(ValueError):
    """What Redis sent cannot be read as RESP."""


def _params(url: str) -> dict[str, Any]:
    """What a Redis URL says: host, port, db, username, password, a Unix `path`, TLS."""
    params: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
    return params


def supports(url: str) -> bool:
    """Whether this client can reach `url` (TLS is left to redis-py)."""
    return _params(url).get("connection_class") is not SSLConnection


def encode_command(*parts: Arg) -> bytes:
    """One command in RESP, as redis-py would send it (hiredis writes it, in C)."""
    packed: bytes = hiredis.pack_command(cast(Any, parts))
    return packed


class _Call:
    __slots__ = ("future", "retry", "sent")

    def __init__(
        self, future: asyncio.Future[Any], retry: Callable[[], bytes] | None, sent: float
    ) -> None:
        self.future = future
        self.retry = retry  # builds the same call as EVAL, sent on NOSCRIPT
        self.sent = sent


def _settle(future: asyncio.Future[Any], reply: Any, error: Exception | None) -> None:
    if future.done():
        return  # its caller is gone (cancelled): the answer is dropped
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(reply)


class _Connection(asyncio.Protocol):
    """One Redis connection: commands handed over in a pass of the event loop go out in one
    write at its end; replies are matched to them in order."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.timeout = timeout
        self.transport: asyncio.Transport | None = None
        #: commands handed over during this pass of the event loop, written at its end
        self.unsent: list[bytes] = []
        self.waiting: deque[_Call] = deque()
        self.replies = hiredis.Reader(replyError=ReplyError, protocolError=_NotResp)
        self.closed = False
        self.watchdog: asyncio.TimerHandle | None = None

    # asyncio.Protocol ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transport is no asyncio.Transport subclass: hence the cast
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(RecordPipeError(f"the delivery store connection was lost: {exc or 'closed'}"))

    def data_received(self, data: bytes) -> None:
        self.replies.feed(data)
        while not self.closed:
            try:
                reply = self.replies.gets()
            except _NotResp as exc:
                self.fail(RecordPipeError(f"the delivery store sent what is not RESP: {exc}"))
                return
            if reply is False:  # the rest of it has not arrived yet
                return
            self._answer(reply)

    # sending -------------------------------------------------------------------------------
    def send(
        self, command: bytes, *, retry: Callable[[], bytes] | None = None
    ) -> asyncio.Future[Any]:
        """Send `command` (at the end of this pass of the event loop, with every other command
        handed over in it); the future of its reply."""
        future: asyncio.Future[Any] = self.loop.create_future()
        self._send(command, future, retry)
        return future

    def _send(
        self, command: bytes, future: asyncio.Future[Any], retry: Callable[[], bytes] | None
    ) -> None:
        if self.closed or self.transport is None:
            _settle(future, None, RecordPipeError("the delivery store connection is closed"))
            return
        if not self.unsent:
            self.loop.call_soon(self._flush)
        self.unsent.append(command)
        self.waiting.append(_Call(future, retry, self.loop.time()))
        if self.watchdog is None:
            self.watchdog = self.loop.call_later(self.timeout, self._check_late)

    def _flush(self) -> None:
        """Write every command handed over in the pass that just ended, in one write."""
        unsent, self.unsent = self.unsent, []
        if unsent and not self.closed and self.transport is not None:
            self.transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))

    def _check_late(self) -> None:
        self.watchdog = None
        if not self.waiting:
            return
        waited = self.loop.time() - self.waiting[0].sent
        if waited >= self.timeout:
            late = f"the delivery store did not answer within {self.timeout:g}s"
            self.fail(RecordPipeError(late))
            return
        self.watchdog = self.loop.call_later(self.timeout - waited, self._check_late)

    def fail(self, error: Exception) -> None:
        """Fail every call in flight and close: nothing more is sent on this connection."""
        self.closed = True
        self.unsent.clear()  # dropped with the connection
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        while self.waiting:
            _settle(self.waiting.popleft().future, None, error)
        if self.transport is not None:
            self.transport.abort()

    # receiving -----------------------------------------------------------------------------
    def _answer(self, value: Any) -> None:
        if not self.waiting:
            self.fail(RecordPipeError("the delivery store answered a command never sent"))
            return
        call = self.waiting.popleft()
        noscript = isinstance(value, ReplyError) and str(value).startswith("NOSCRIPT")
        if noscript and call.retry is not None:
            self._send(call.retry(), call.future, None)
        elif isinstance(value, ReplyError):
            _settle(call.future, None, value)
        else:
            _settle(call.future, value, None)


class RecordPipe:
    """Calls of one Lua script over one lazily (re)connected connection of this event loop."""

    def __init__(
        self, url: str, script: str, *, timeout: float = 5.0, connect_timeout: float = 2.0
    ) -> None:
        if not supports(url):
            raise ValueError("TLS Redis URLs are not supported here; use redis-py")
        self.params = _params(url)
        self.script = script.encode()
        self.sha = hashlib.sha1(self.script, usedforsecurity=False).hexdigest().encode()
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None

    async def call(self, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """The script's answer for these KEYS and ARGV, once Redis ran it."""
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connect()
        evalsha, as_eval = self._commands(keys, args)
        return await connection.send(evalsha, retry=as_eval)

    def _commands(
        self, keys: Sequence[str], args: Sequence[Arg]
    ) -> tuple[bytes, Callable[[], bytes]]:
        """The call as EVALSHA, and how to make it as EVAL (sent on NOSCRIPT)."""

        def as_eval() -> bytes:
            return encode_command("EVAL", self.script, len(keys), *keys, *args)

        return encode_command("EVALSHA", self.sha, len(keys), *keys, *args), as_eval

    async def _connect(self) -> _Connection:
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open())
        connecting = self._connecting
        try:
            connection = await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None
        return connection

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        params = self.params
        made = lambda: _Connection(loop, self.timeout)  # noqa: E731
        try:
            if "path" in params:
                opening = loop.create_unix_connection(made, params["path"])
            else:
                host, port = params.get("host", "localhost"), params.get("port", 6379)
                opening = loop.create_connection(made, host, port)
            _, connection = await asyncio.wait_for(opening, self.connect_timeout)
        except (TimeoutError, OSError) as exc:
            raise RecordPipeError(
                f"cannot connect to the delivery store: {exc or type(exc).__name__}"
            ) from None
        handshake = []
        if params.get("password") is not None:
            auth = ["AUTH", params["password"]]
            if params.get("username"):
                auth.insert(1, params["username"])
            handshake.append(connection.send(encode_command(*auth)))
        if params.get("db"):
            handshake.append(connection.send(encode_command("SELECT", params["db"])))
        handshake.append(connection.send(encode_command("SCRIPT", "LOAD", self.script)))
        try:
            *_, loaded = await asyncio.gather(*handshake)
        except redis.ResponseError as exc:
            refused = RecordPipeError(f"the delivery store refused the connection: {exc}")
            connection.fail(refused)
            raise refused from None
        if loaded != self.sha:
            wrong = RecordPipeError(f"the delivery store loaded the script as {loaded!r}")
            connection.fail(wrong)
            raise wrong
        self._connection = connection
        return connection

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.closed:
            connection.fail(RecordPipeError("the delivery store connection was closed"))
