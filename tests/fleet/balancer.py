"""A TCP load balancer on loopback, as a fleet's public addresses would be: each connection goes
to the next of its backends in turn, and what it carries is passed on untouched."""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from collections import Counter
from types import TracebackType


class Balancer:
    """Listens on a port of its own (`url`); each connection accepted is joined to the next
    backend port in turn. `connections` counts them by backend port."""

    def __init__(self, backends: list[int]) -> None:
        if not backends:
            raise ValueError("a balancer needs at least one backend port")
        self.backends = list(backends)
        self.connections: Counter[int] = Counter()
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        #: what accept() raised while the balancer was open (it went on after each)
        self.accept_errors: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._accept, daemon=True, name="balancer")

    def __enter__(self) -> Balancer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        self._listener.close()
        with self._lock:
            still = list(self._open)
        for sock in still:
            with contextlib.suppress(OSError):
                sock.close()
        self._thread.join(5)

    @property
    def accepting(self) -> bool:
        return self._thread.is_alive()

    def counts(self) -> dict[int, int]:
        with self._lock:
            return {port: self.connections[port] for port in self.backends}

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError as exc:
                if self._closed:
                    return
                # a connection that went away before it was accepted, or a passing shortage of
                # descriptors: the balancer goes on, as a real one would, and says so
                self.accept_errors.append(repr(exc))
                time.sleep(0.05)
                continue
            port = self.backends[next(self._turn) % len(self.backends)]
            threading.Thread(target=self._join, args=(client, port), daemon=True).start()

    def _join(self, client: socket.socket, port: int) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            client.close()  # the backend is down: the client sees the connection closed
            return
        upstream.settimeout(None)
        with self._lock:
            self.connections[port] += 1
            self._open.update((client, upstream))
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until `source` ends, then end `sink`'s sending side."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
