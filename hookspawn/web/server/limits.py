"""What one connection may cost before anyone is authenticated: deadlines, sizes, counts.

`GuardedProtocol` is uvicorn's httptools protocol with these limits added around uvicorn's
own handling, each override calling uvicorn's method; keep-alive, pipelining, the request
cycle and shutdown stay uvicorn's. uvicorn documents none of what this relies on, so it is
all named in `UVICORN_CONTRACT` below, and tests/hookspawn/web/server/test_uvicorn_contract.py
checks each name against the installed uvicorn (pinned to one minor in pyproject.toml) and
that nothing else in the project reaches past uvicorn's public `Config` and `Server`.
"""

from __future__ import annotations

import asyncio
import http
from collections import deque
from dataclasses import dataclass
from typing import Any, cast

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hookspawn.web.http_errors import API_CODES, ApiError, error_body
from hookspawn.web.intake.write_coalescing import CoalescingTransport
from workers.settings import Settings

#: after a refusal, how long the rest of what the client sends is read and dropped before
#: the socket closes, so the refusal reaches it instead of a reset
LINGER_SECONDS = 1.0


@dataclass(frozen=True)
class UvicornContract:
    """What this module relies on in uvicorn beyond its documented interface (`Config(http=)`
    taking a protocol class)."""

    #: where the class subclassed lives, and its name
    module: str
    protocol: str
    #: the methods extended (each override calls uvicorn's), with their arguments
    methods: dict[str, tuple[str, ...]]
    #: the protocol's attributes read or set
    protocol_attributes: tuple[str, ...]
    #: the attributes read or set of `cycle`, the request being read (a RequestResponseCycle)
    cycle_attributes: tuple[str, ...]


UVICORN_CONTRACT = UvicornContract(
    module="uvicorn.protocols.http.httptools_impl",
    protocol="HttpToolsProtocol",
    methods={
        # asyncio's protocol interface, as uvicorn implements it
        "connection_made": ("transport",),
        "connection_lost": ("exc",),
        "data_received": ("data",),
        # httptools' parser callbacks, as uvicorn implements them
        "on_message_begin": (),
        "on_headers_complete": (),
        "on_body": ("body",),
        "on_message_complete": (),
        # uvicorn's: called once as each answer is complete (the cycle's `on_response`)
        "on_response_complete": (),
        # uvicorn's: its answer to what the parser refuses
        "send_400_response": ("msg",),
    },
    # set by uvicorn's connection_made (every cycle, and uvicorn's own writes, use it); the
    # request being read
    protocol_attributes=("transport", "cycle"),
    cycle_attributes=("response_started", "response_complete", "disconnected", "message_event"),
)


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


class OpenConnections:
    """Client connections the process holds at once (one event loop)."""

    def __init__(self) -> None:
        self.count = 0


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
      with `Retry-After`, and what it held is given back at once;
    - a request the parser refuses is answered 400 `invalid_request`.

    Each refusal is answered (unless an answer has started), the request's app is told its
    client is gone, and what still arrives is read and dropped until the socket closes.
    Both deadlines are watched by one timer per connection that is moved only when it fires:
    a request sets its deadline (a number), and the timer, armed for an earlier deadline,
    finds it not yet due and re-arms itself for the one now in force. An idle keep-alive
    connection is uvicorn's to close (`timeout_keep_alive`).
    """

    limits: Limits
    budget: BodyBudget
    open_connections: OpenConnections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # made by the server's loop, for a connection it accepted
        self.clock = asyncio.get_running_loop()
        #: the one deadline timer; what it enforces is the phase's deadline below
        self.deadline_timer: asyncio.TimerHandle | None = None
        self.header_deadline = 0.0
        self.body_deadline = 0.0
        self.linger_timer: asyncio.TimerHandle | None = None
        self.reading_headers = False
        self.reading_body = False
        self.header_bytes = 0
        self.admitted = False
        self.refused = False
        #: body bytes taken from the budget by each request read and not answered yet,
        #: oldest first (answers go out in the order of their requests)
        self.held: deque[int] = deque()

    # connection ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self.open_connections.count >= self.limits.max_connections:
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
        self.admitted = True
        self.open_connections.count += 1
        super().connection_made(transport)
        # a response's head and body, written in one pass, go out in one write
        self.transport = cast(asyncio.Transport, CoalescingTransport(transport, self.clock))
        self.start_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self.deadline_timer, self.linger_timer):
            if timer is not None:
                timer.cancel()
        self.give_back_all()
        if self.admitted:  # one refused at the cap never reached uvicorn
            self.open_connections.count -= 1
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # answered already; what still arrives is dropped until the socket closes
        if self.reading_headers:
            self.header_bytes += len(data)
        super().data_received(data)
        if self.reading_headers and self.header_bytes > self.limits.max_header_bytes:
            self.refuse(
                Refused(
                    "headers_too_large",
                    f"the request line and headers are over {self.limits.max_header_bytes} "
                    "bytes (HOOKSPAWN_MAX_HEADER_BYTES)",
                )
            )

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what the parser refuses: refused here like every other."""
        self.refuse(Refused("invalid_request", "not a valid HTTP/1.1 request"))

    def give_back_all(self) -> None:
        self.budget.give_back(sum(self.held))
        self.held.clear()

    def refuse(self, refusal: Refused) -> None:
        """Answer (unless an answer has started), then drop whatever else arrives and close
        after a short linger: closing a socket with unread input would reset the connection
        and lose the answer on its way."""
        if self.refused:
            return
        self.refused = True
        self.reading_headers = self.reading_body = False
        self.give_back_all()  # its bytes are dropped from now on
        cycle = self.cycle  # the last request whose headers were read, if any
        started = False
        if cycle is not None and not cycle.response_complete:
            started = cycle.response_started
            cycle.disconnected = True  # the app's receive() sees a disconnect; its send is dropped
            cycle.message_event.set()
        if self.deadline_timer is not None:
            self.deadline_timer.cancel()
            self.deadline_timer = None
        transport = self.transport
        if transport.is_closing():
            return
        transport.resume_reading()  # drain what arrives, so the close is not a reset
        if not started:
            transport.write(refusal.response())
        if transport.can_write_eof():
            transport.write_eof()
            self.linger_timer = self.clock.call_later(LINGER_SECONDS, transport.close)
        else:
            transport.close()

    # parser callbacks ----------------------------------------------------------------------
    def start_headers(self) -> None:
        self.reading_headers = True
        self.header_bytes = 0
        self.header_deadline = self.clock.time() + self.limits.header_timeout
        self._watch(self.header_deadline)

    def _watch(self, deadline: float) -> None:
        """Have the deadline timer fire by `deadline`: left as it is when armed for no later
        (it re-arms itself when it fires early), else armed anew."""
        timer = self.deadline_timer
        if timer is not None:
            if timer.when() <= deadline:
                return
            timer.cancel()
        self.deadline_timer = self.clock.call_at(deadline, self._deadline_passed)

    def _deadline_passed(self) -> None:
        self.deadline_timer = None
        now = self.clock.time()
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

    def over_budget(self) -> Refused:
        seconds = max(1, round(self.limits.body_timeout))
        return Refused(
            "body_budget_exceeded",
            f"request bodies in flight are at the {self.limits.body_budget}-byte budget "
            "(HOOKSPAWN_BODY_BUDGET): try again shortly",
            {"retry-after": str(seconds)},
        )

    # after a refusal the parser still reads what it was fed: its callbacks then do nothing
    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not (self.refused or self.reading_headers):
            self.start_headers()

    def on_headers_complete(self) -> None:
        if self.refused:
            return
        self.reading_headers = False
        super().on_headers_complete()
        # nothing is taken for what the headers declare: a body holds the budget only with
        # the bytes that have arrived, so declared-but-unsent bodies starve nobody
        self.held.append(0)
        self.reading_body = True
        self.body_deadline = self.clock.time() + self.limits.body_timeout
        self._watch(self.body_deadline)

    def on_body(self, body: bytes) -> None:
        if self.refused:
            return
        # an answered request holds nothing (uvicorn drops the rest of its body): taken only
        # while unanswered, as the bytes arrive, declared length or not (chunked)
        if self.held:
            if not self.budget.take(len(body)):
                self.refuse(self.over_budget())
                return
            self.held[-1] += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self.refused:
            return
        self.reading_body = False
        super().on_message_complete()

    # answers -------------------------------------------------------------------------------
    def on_response_complete(self) -> None:
        # the oldest request still holding body bytes is the one just answered
        if self.held:
            self.budget.give_back(self.held.popleft())
        super().on_response_complete()


def protocol(limits: Limits) -> type[GuardedProtocol]:
    """The protocol class for uvicorn's `http=`: these limits, one body budget and one count
    of connections per process."""
    return type(
        "HookspawnProtocol",
        (GuardedProtocol,),
        {
            "limits": limits,
            "budget": BodyBudget(limits.body_budget),
            "open_connections": OpenConnections(),
        },
    )
