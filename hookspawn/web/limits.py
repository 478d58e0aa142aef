"""What one connection may cost before anyone is authenticated: deadlines, sizes, counts."""

from __future__ import annotations

import asyncio
import http
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import httptools
import orjson
from uvicorn._types import ASGI3Application, ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from hookspawn.web.http_errors import API_CODES, ApiError, error_body
from hookspawn.web.write_coalescing import CoalescingTransport
from workers.settings import Settings

#: after a refusal, how long the rest of what the client sends is read and dropped before
#: the socket closes, so the refusal reaches it instead of a reset
LINGER_SECONDS = 1.0


@dataclass(frozen=True)
class Limits:
    header_timeout: float
    body_timeout: float
    max_header_bytes: int
    max_connections: int
    body_budget: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            header_timeout=settings.header_timeout.total_seconds(),
            body_timeout=settings.body_timeout.total_seconds(),
            max_header_bytes=settings.max_header_bytes,
            max_connections=settings.max_connections,
            body_budget=settings.body_budget,
        )


class BodyBudget:
    """Request body bytes held by every request of the process at once (one event loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held = max(0, self.held - size)


class Refused(ApiError):
    """A request refused by the connection itself: answered, then the connection closes."""

    def __init__(self, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(code, message)
        self.headers = headers or {}

    @property
    def status(self) -> int:
        return API_CODES[self.code]

    def response(self) -> bytes:
        body = orjson.dumps(error_body(self.code, self.message))
        lines = [
            f"HTTP/1.1 {self.status} {http.HTTPStatus(self.status).phrase}",
            "content-type: application/json",
            f"content-length: {len(body)}",
            "connection: close",
            *(f"{name}: {value}" for name, value in self.headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the limits every connection gets before the app.

    - a connection past `max_connections` is answered 503 and closed;
    - the request line and headers must arrive within `header_timeout` (408) and stay
      within `max_header_bytes` (431): httptools itself would buffer a header line of any size;
    - the body must arrive within `body_timeout` of the headers (408);
    - body bytes count against one `BodyBudget` from when they arrive until their request is
      answered (never a length only declared, so idle connections holding declared-but-unsent
      bodies take nothing from it): a request whose arriving bytes do not fit is answered 503
      with `Retry-After`, and what it held is given back at once.

    Both deadlines are watched by one timer per connection that is moved only when it fires:
    a request sets its deadline (a number), and the timer, armed for an earlier deadline,
    finds it not yet due and re-arms itself for the one now in force; no timer is made or
    cancelled per request. uvicorn's keep-alive timeout (an idle connection closed that long
    after its last answer) is kept the same way, by a second timer.
    """

    limits: Limits
    budget: BodyBudget

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the one deadline timer; what it enforces is the phase's deadline below
        self.deadline_timer: asyncio.TimerHandle | None = None
        self.header_deadline = 0.0
        self.body_deadline = 0.0
        self.linger_timer: asyncio.TimerHandle | None = None
        self.reading_headers = False
        self.reading_body = False
        self.header_bytes = 0
        self.refused = False
        #: body bytes taken from the budget, per request, until its app call returns
        self.held: dict[RequestResponseCycle, int] = {}
        #: when the connection's last answer was written, while no request has come since
        self.idle_since: float | None = None
        self.idle_timer: asyncio.TimerHandle | None = None

    # connection ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self.transport = transport
            self.refuse(
                Refused(
                    "too_many_connections",
                    f"this server holds {self.limits.max_connections} connections at most "
                    "(HOOKSPAWN_MAX_CONNECTIONS): try again shortly",
                    {"retry-after": "1"},
                )
            )
            return
        super().connection_made(transport)
        # a response's head and body, written in one pass, go out in one write
        self.transport = cast(asyncio.Transport, CoalescingTransport(transport, self.loop))
        self.start_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self.deadline_timer, self.linger_timer, self.idle_timer):
            if timer is not None:
                timer.cancel()
        for cycle, _ in self.pipeline:  # queued, never started: nothing else gives them back
            self.budget.give_back(self.held.pop(cycle, 0))
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # answered already; what still arrives is dropped until the socket closes
        self._unset_keepalive_if_required()
        if self.reading_headers:
            self.header_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._unsupported_upgrade_warning()  # no upgrade is served (uvicorn's ws="none")
        except httptools.HttpParserError as exc:
            # a refusal raised in a parser callback comes out wrapped in a parser error
            cause = exc.__context__
            if isinstance(cause, Refused):
                self.refuse(cause)
            else:
                self.refuse(Refused("invalid_request", f"not a valid HTTP/1.1 request: {exc}"))
            return
        if self.reading_headers and self.header_bytes > self.limits.max_header_bytes:
            self.refuse(
                Refused(
                    "headers_too_large",
                    f"the request line and headers are over {self.limits.max_header_bytes} "
                    "bytes (HOOKSPAWN_MAX_HEADER_BYTES)",
                )
            )

    def refuse(self, refusal: Refused) -> None:
        """Answer (unless an answer has started), then drop whatever else arrives and close
        after a short linger: closing a socket with unread input would reset the connection
        and lose the answer on its way."""
        if self.refused:
            return
        self.refused = True
        cycle = self.cycle
        started = False
        if cycle is not None:  # its bytes are dropped from now on: given back at once
            self.budget.give_back(self.held.pop(cycle, 0))
        if cycle is not None and not cycle.response_complete:
            started = cycle.response_started
            cycle.disconnected = True  # the app's receive() sees a disconnect; its send is dropped
            cycle.message_event.set()
        if self.deadline_timer is not None:
            self.deadline_timer.cancel()
            self.deadline_timer = None
        if self.transport.is_closing():
            return
        if self.flow is not None:
            self.flow.resume_reading()  # drain what arrives, so the close is not a reset
        if not started:
            self.transport.write(refusal.response())
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.linger_timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()

    # keep-alive ----------------------------------------------------------------------------
    def on_response_complete(self) -> None:
        """uvicorn's, with its keep-alive timeout kept by one timer a connection, moved only
        when it fires (uvicorn makes a timer after every answer, which the next request
        cancels): an idle connection still closes `timeout_keep_alive` after its last answer."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        self.idle_since = self.loop.time()
        if self.idle_timer is None:
            due = self.idle_since + self.timeout_keep_alive
            self.idle_timer = self.loop.call_at(due, self._idle_passed)

    def _unset_keepalive_if_required(self) -> None:
        # uvicorn calls this whenever the client sends: the connection is not idle
        self.idle_since = None
        super()._unset_keepalive_if_required()

    def _idle_passed(self) -> None:
        self.idle_timer = None
        if self.idle_since is None or self.transport.is_closing():
            return  # busy since: its next answer arms the timer again
        due = self.idle_since + self.timeout_keep_alive
        if self.loop.time() >= due:
            self.timeout_keep_alive_handler()
        else:
            self.idle_timer = self.loop.call_at(due, self._idle_passed)

    # parser callbacks ----------------------------------------------------------------------
    def start_headers(self) -> None:
        self.reading_headers = True
        self.header_bytes = 0
        self.header_deadline = self.loop.time() + self.limits.header_timeout
        self._watch(self.header_deadline)

    def _watch(self, deadline: float) -> None:
        """Have the deadline timer fire by `deadline`: left as it is when armed for no later
        (it re-arms itself when it fires early), else armed anew."""
        timer = self.deadline_timer
        if timer is not None:
            if timer.when() <= deadline:
                return
            timer.cancel()
        self.deadline_timer = self.loop.call_at(deadline, self._deadline_passed)

    def _deadline_passed(self) -> None:
        self.deadline_timer = None
        now = self.loop.time()
        if self.reading_headers:
            if now >= self.header_deadline:
                self.headers_late()
            else:
                self._watch(self.header_deadline)
        elif self.reading_body:
            if now >= self.body_deadline:
                self.body_late()
            else:
                self._watch(self.body_deadline)

    def headers_late(self) -> None:
        seconds = self.limits.header_timeout
        self.refuse(
            Refused(
                "header_timeout",
                f"the request line and headers did not arrive within {seconds:g}s "
                "(HOOKSPAWN_HEADER_TIMEOUT)",
            )
        )

    def body_late(self) -> None:
        seconds = self.limits.body_timeout
        self.refuse(
            Refused(
                "body_timeout",
                f"the request body did not arrive within {seconds:g}s of its headers "
                "(HOOKSPAWN_BODY_TIMEOUT)",
            )
        )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self.reading_headers:
            self.start_headers()

    def on_headers_complete(self) -> None:
        self.reading_headers = False
        # nothing is taken for what the headers declare: a body holds the budget only with
        # the bytes that have arrived, so declared-but-unsent bodies starve nobody
        super().on_headers_complete()
        self.held[self.cycle] = 0
        self.reading_body = True
        self.body_deadline = self.loop.time() + self.limits.body_timeout
        self._watch(self.body_deadline)

    def over_budget(self) -> Refused:
        seconds = max(1, round(self.limits.body_timeout))
        return Refused(
            "body_budget_exceeded",
            f"request bodies in flight are at the {self.limits.body_budget}-byte budget "
            "(HOOKSPAWN_BODY_BUDGET): try again shortly",
            {"retry-after": str(seconds)},
        )

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if not (cycle.response_complete or cycle.disconnected):
            # taken as the bytes arrive, declared length or not (chunked)
            if not self.budget.take(len(body)):
                raise self.over_budget()
            self.held[cycle] = self.held.get(cycle, 0) + len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self.reading_body = False
        super().on_message_complete()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        async def run(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
            try:
                await app(scope, receive, send)
            finally:
                self.budget.give_back(self.held.pop(cycle, 0))

        super()._start_asgi_task(cycle, run)


def content_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def protocol(
    limits: Limits, base: type[GuardedProtocol] = GuardedProtocol
) -> type[GuardedProtocol]:
    """The protocol class for uvicorn's `http=`: `base` with these limits, and one budget per
    process."""
    return type(
        "HookspawnProtocol",
        (base,),
        {"limits": limits, "budget": BodyBudget(limits.body_budget)},
    )
