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
- A primary found through Redis Sentinel (`Sentinels`): each connection is opened to the
  address the sentinels give then; an answer READONLY (that server is a replica now: a
  failover happened) fails the call and closes the connection, so the next call asks again.
- With a `ReplicaAck` of n replicas, every flush that carries script calls ends with one
  `WAIT n timeout`, which covers all of them (WAIT counts the connection's writes so far):
  a call's answer is given only after that WAIT's, and when fewer than n replicas
  acknowledged, the call fails with StoreNotReplicated (its write stands on the primary).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import hiredis
import redis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.connection import SSLConnection, parse_url

from workers.errors import StoreNotReplicated
from workers.redis_target import NO_ACK, RedisTarget, ReplicaAck, Sentinels

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


def supports(target: RedisTarget) -> bool:
    """Whether this client can reach `target` (TLS is left to redis-py)."""
    if isinstance(target, Sentinels):
        return True
    return _params(target).get("connection_class") is not SSLConnection


def encode_command(*parts: Arg) -> bytes:
    """One command in RESP, as redis-py would send it (hiredis writes it, in C)."""
    packed: bytes = hiredis.pack_command(cast(Any, parts))
    return packed


class _Call:
    __slots__ = ("covered", "future", "reply", "retry", "sent")

    def __init__(
        self,
        future: asyncio.Future[Any],
        retry: Callable[[], bytes] | None,
        sent: float,
        covered: bool = False,
    ) -> None:
        self.future = future
        self.retry = retry  # builds the same call as EVAL, sent on NOSCRIPT
        self.sent = sent
        #: answered only after the WAIT of its flush (its reply kept meanwhile)
        self.covered = covered
        self.reply: Any = None


class _Wait:
    """The WAIT that ends a flush: the covered calls of that flush wait for its answer."""

    __slots__ = ("calls", "sent")

    def __init__(self, calls: list[_Call], sent: float) -> None:
        self.calls = calls
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

    def __init__(
        self, loop: asyncio.AbstractEventLoop, timeout: float, ack: ReplicaAck = NO_ACK
    ) -> None:
        self.loop = loop
        self.timeout = timeout
        self.ack = ack
        self.transport: asyncio.Transport | None = None
        #: commands handed over during this pass of the event loop, written at its end
        self.unsent: list[bytes] = []
        #: the calls among them a WAIT is to cover
        self.covered: list[_Call] = []
        self.wait = encode_command("WAIT", ack.replicas, ack.timeout_ms)
        self.waiting: deque[_Call | _Wait] = deque()
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
        self, command: bytes, *, retry: Callable[[], bytes] | None = None, covered: bool = False
    ) -> asyncio.Future[Any]:
        """Send `command` (at the end of this pass of the event loop, with every other command
        handed over in it); the future of its reply. `covered`: answered only once the
        replicas the connection's `ack` asks for hold what it wrote."""
        future: asyncio.Future[Any] = self.loop.create_future()
        self._send(command, future, retry, covered and self.ack.replicas > 0)
        return future

    def _send(
        self,
        command: bytes,
        future: asyncio.Future[Any],
        retry: Callable[[], bytes] | None,
        covered: bool = False,
    ) -> None:
        if self.closed or self.transport is None:
            _settle(future, None, RecordPipeError("the delivery store connection is closed"))
            return
        if not self.unsent:
            self.loop.call_soon(self._flush)
        self.unsent.append(command)
        call = _Call(future, retry, self.loop.time(), covered)
        self.waiting.append(call)
        if covered:
            self.covered.append(call)
        if self.watchdog is None:
            self.watchdog = self.loop.call_later(self.timeout, self._check_late)

    def _flush(self) -> None:
        """Write every command handed over in the pass that just ended, in one write (and a
        WAIT after them, when some are to be acknowledged by replicas)."""
        unsent, self.unsent = self.unsent, []
        covered, self.covered = self.covered, []
        if not unsent or self.closed or self.transport is None:
            return
        if covered:
            unsent.append(self.wait)
            self.waiting.append(_Wait(covered, self.loop.time()))
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
        self.covered.clear()
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        while self.waiting:
            waiting = self.waiting.popleft()
            if isinstance(waiting, _Wait):
                for call in waiting.calls:  # answered by Redis, not yet acknowledged
                    _settle(call.future, None, error)
            else:
                _settle(waiting.future, None, error)
        if self.transport is not None:
            self.transport.abort()

    # receiving -----------------------------------------------------------------------------
    def _answer(self, value: Any) -> None:
        if not self.waiting:
            self.fail(RecordPipeError("the delivery store answered a command never sent"))
            return
        call = self.waiting.popleft()
        if isinstance(call, _Wait):
            self._acknowledged(call, value)
            return
        noscript = isinstance(value, ReplyError) and str(value).startswith("NOSCRIPT")
        if noscript and call.retry is not None:
            call.covered = False  # its WAIT no longer covers it: the retry's flush's does
            self._send(call.retry(), call.future, None, self.ack.replicas > 0)
        elif isinstance(value, ReplyError):
            call.covered = False
            _settle(call.future, None, value)
            if str(value).startswith("READONLY"):
                # a replica now (a failover): the next call connects to the new primary
                self.fail(RecordPipeError(f"the delivery store is a replica now: {value}"))
        elif call.covered:
            call.reply = value  # answered once its WAIT is
        else:
            _settle(call.future, value, None)

    def _acknowledged(self, wait: _Wait, value: Any) -> None:
        """The WAIT of a flush answered: its calls answered, or failed as not replicated."""
        error: Exception | None = None
        if isinstance(value, ReplyError):
            error = RecordPipeError(f"the delivery store refused WAIT: {value}")
        elif not isinstance(value, int) or value < self.ack.replicas:
            error = StoreNotReplicated(
                f"the delivery is on the Redis primary but only {value} of the "
                f"{self.ack.replicas} replicas HOOKSPAWN_REDIS_MIN_REPLICAS_ACK asks for "
                f"acknowledged it within {self.ack.timeout_ms} ms",
                acknowledged=value,
                wanted=self.ack.replicas,
            )
        for call in wait.calls:
            if call.covered:
                _settle(call.future, call.reply, error)


class RecordPipe:
    """Calls of one Lua script over one lazily (re)connected connection of this event loop."""

    def __init__(
        self,
        target: RedisTarget,
        script: str,
        *,
        timeout: float = 5.0,
        connect_timeout: float = 2.0,
        ack: ReplicaAck = NO_ACK,
    ) -> None:
        """`target`: a Redis URL, or the primary its sentinels name (asked on each connect);
        `ack`: the replicas a call's writes must reach before it is answered."""
        if not supports(target):
            raise ValueError("TLS Redis URLs are not supported here; use redis-py")
        if isinstance(target, Sentinels):
            self.sentinels: Sentinels | None = target
            self.params: dict[str, Any] = {"password": target.password}
        else:
            self.sentinels = None
            self.params = _params(target)
        self.ack = ack
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
        return await connection.send(evalsha, retry=as_eval, covered=True)

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
        made = lambda: _Connection(loop, self.timeout, self.ack)  # noqa: E731
        try:
            if "path" in params:
                opening = loop.create_unix_connection(made, params["path"])
            else:
                host, port = await self._address()
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

    async def _address(self) -> tuple[str, int]:
        """Where the primary is: the URL's host and port, or what the sentinels say now."""
        if self.sentinels is None:
            return self.params.get("host", "localhost"), self.params.get("port", 6379)
        # asked anew on each connect (rare: at start and after a lost connection), its
        # connections closed at once
        sentinel = AsyncSentinel(  # type: ignore[no-untyped-call]
            list(self.sentinels.addresses), sentinel_kwargs=self.sentinels.sentinel_options()
        )
        try:
            host, port = await sentinel.discover_master(self.sentinels.master)
        except redis.RedisError as exc:
            raise RecordPipeError(
                f"no Redis primary from the sentinels ({self.sentinels.describe()}): {exc}"
            ) from None
        finally:
            await sentinel.aclose()
        return str(host), int(port)

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.closed:
            connection.fail(RecordPipeError("the delivery store connection was closed"))
