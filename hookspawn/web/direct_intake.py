"""POST /webhooks/github answered by the connection itself, with no ASGI task.

Intake is the one path that carries load. Through ASGI, each request is a task, a dozen
coroutine frames resumed when Redis answers, and its answer two messages checked header by
header: about as much CPU as a bare endpoint's whole request. Here the connection waits
for the whole body, hands it to the app's `begin_intake` (the same Host check, checks,
record script and counters as the ASGI path), and writes the answer from the record's
callback.

Only the plain case takes this way: a POST to the path whose Content-Length is at most
64 KB (the most uvicorn holds without pausing the socket) and which waits for no
`100 Continue`, to the app itself (not one uvicorn wrapped in its proxy-header middleware,
which `HOOKSPAWN_TRUSTED_PROXIES` turns on). Anything else, and any request that
`begin_intake` declines (refused, or no open connection to the store yet), goes through the
app as before, which answers it; a record that fails is answered through the app too.
Keep-alive, `Connection: close`, pipelining and shutdown are left to uvicorn: the answer
ends the request cycle as uvicorn's own `send` would.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

from uvicorn._types import ASGI3Application
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, RequestResponseCycle
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from hookspawn.web.limits import GuardedProtocol, content_length
from hookspawn.web.receiver import PATH, Begun, Recorded
from workers.delivery.write_coalescing import CoalescingTransport

_JSON_HEADERS = b"content-type: application/json\r\ncontent-length: "
_CLOSE = b"connection: close\r\n"


class DirectIntakeProtocol(GuardedProtocol):
    """The guarded protocol, answering plain intake requests itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the app itself only: one uvicorn wrapped (in its proxy-header middleware) has none
        self.begin: Callable[[Any, bytes, Recorded], bool] | None = getattr(
            self.app, "begin_intake", None
        )
        #: the intake request whose body is still arriving, and the app it would go to
        self.waiting: tuple[RequestResponseCycle, ASGI3Application] | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiting is not None:  # never started: nothing else gives its bytes back
            self.budget.give_back(self.held.pop(self.waiting[0], 0))
            self.waiting = None
        super().connection_lost(exc)

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        if self.begin is not None and app is self.app and _plain_intake(cycle):
            self.waiting = (cycle, app)
            if not cycle.more_body:  # a pipelined request, read whole while it waited
                self._begin()
            return
        super()._start_asgi_task(cycle, app)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        if self.waiting is not None and self.waiting[0] is self.cycle:
            self._begin()

    def _begin(self) -> None:
        assert self.waiting is not None and self.begin is not None
        cycle, app = self.waiting
        self.waiting = None
        if cycle.disconnected:
            self.budget.give_back(self.held.pop(cycle, 0))
            return
        recorded = functools.partial(self._recorded, cycle)
        try:
            taken = self.begin(cycle.scope, bytes(cycle.body), recorded)
        except Exception:  # the app's way meets it again, and answers and logs it there
            taken = False
        if not taken:
            super()._start_asgi_task(cycle, app)

    def _recorded(
        self, cycle: RequestResponseCycle, begun: Begun, reply: Any, error: Exception | None
    ) -> None:
        if error is None:
            try:
                status, body = begun.answer(reply)
            except Exception as exc:
                error = exc
        if error is not None:
            super()._start_asgi_task(cycle, functools.partial(begun.refuse, error))
            return
        self.budget.give_back(self.held.pop(cycle, 0))
        if cycle.disconnected:
            return  # recorded; nobody is left to answer (uvicorn's send drops it too)
        if self.access_log:  # the line uvicorn's send would write
            scope = cycle.scope
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(scope),
                scope["method"],
                get_path_with_query_string(scope),
                scope["http_version"],
                status,
            )
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += (name, b": ", value, b"\r\n")
        head += (_JSON_HEADERS, b"%d\r\n" % len(body))
        if not cycle.keep_alive:
            head.append(_CLOSE)
        head += (b"\r\n", body)
        # the connection's writes go through a CoalescingTransport (GuardedProtocol's)
        cast(CoalescingTransport, self.transport).write_whole(b"".join(head))
        cycle.response_started = cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            self.transport.close()
        cycle.on_response()


def _plain_intake(cycle: RequestResponseCycle) -> bool:
    scope = cycle.scope
    if scope["method"] != "POST" or scope["path"] != PATH or cycle.waiting_for_100_continue:
        return False
    size = content_length(scope["headers"])
    return size is not None and 0 < size <= HIGH_WATER_LIMIT
