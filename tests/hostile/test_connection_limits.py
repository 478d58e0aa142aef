"""Attacks on a real `hookspawn web` over real loopback sockets, before any authentication.

Each attack checks what the server answers the attacking connections, that the web process's
resident memory (VmRSS, sampled while the attack holds; VmHWM, its peak) stays under
RSS_BOUND_KB, and that a signed delivery sent during the attack is answered 202 within
DELIVERY_SECONDS. The figures are printed in the suite's output, kept in
test-artifacts/hostile/attacks.txt, and recorded in BENCHMARKS.md.
Two more: the connection cap, and `hookspawn serve`, whose web runs with the same limits.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest
from pydantic import ValidationError

from hookspawn.serve.redis_server import RedisServer
from tests import loopback
from tests.conftest import WEBHOOKS, wait_for, webhook_headers
from tests.hostile.conftest import ADMIN_TOKEN, signed_delivery, web_process
from tests.procs import Proc, environment, serving, status_kb
from workers.settings import Settings

pytestmark = pytest.mark.slow

#: short deadlines keep each attack to seconds; the limits themselves are the defaults
HEADER_TIMEOUT = 3
BODY_TIMEOUT = 5
BUDGET = 256 * 1024 * 1024  # HOOKSPAWN_BODY_BUDGET's default
#: what the web process may hold at any time during these attacks: its own ~100 MB, the
#: whole body budget held at once, and room for the allocator
RSS_BOUND_KB = 512 * 1024
#: a signed delivery during an attack is answered 202 within this (a generous bound)
DELIVERY_SECONDS = 2.0

DELIVERY = orjson.dumps(orjson.loads((WEBHOOKS / "issues" / "opened.payload.json").read_bytes()))


@dataclass
class Web:
    proc: Proc
    url: str
    port: int
    figures: list[str] = field(default_factory=list)

    def rss_kb(self) -> int:
        return status_kb(self.proc.pid, "VmRSS")

    def peak_kb(self) -> int:
        return status_kb(self.proc.pid, "VmHWM")


#: where the figures are kept after a run (gitignored), besides the terminal
FIGURES = Path(__file__).resolve().parents[2] / "test-artifacts" / "hostile" / "attacks.txt"


@pytest.fixture(scope="module")
def web(
    redis_server: RedisServer,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[Web]:
    url = redis_server.url
    root = tmp_path_factory.mktemp("limits")
    settings = {"HEADER_TIMEOUT": f"{HEADER_TIMEOUT}s", "BODY_TIMEOUT": f"{BODY_TIMEOUT}s"}
    with web_process(root, url, **settings) as (proc, base):
        web = Web(proc, base, int(urlsplit(base).port or 0))
        web.figures.append(f"web at rest: VmRSS {web.rss_kb() / 1024:.0f} MB")
        yield web
    text = "\n".join(web.figures) + "\n"
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(text)
    # shown in the suite's output even when pytest captures it (the figures are the result)
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\nconnection attacks on hookspawn web (also in {FIGURES}):\n{text}")


def connect(web: Web, head: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=10)
    sock.sendall(head)
    sock.setblocking(False)
    return sock


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer[9:12])


def delivery_during(web: Web, what: str) -> None:
    status, seconds = signed_delivery(web.url, DELIVERY)
    rss = web.rss_kb()
    web.figures.append(
        f"{what}: signed delivery {status} in {seconds * 1000:.0f} ms; VmRSS {rss / 1024:.0f} MB"
    )
    assert status == 202
    assert seconds < DELIVERY_SECONDS, f"{what}: a signed delivery took {seconds:.2f}s"
    assert rss < RSS_BOUND_KB, f"{what}: web VmRSS {rss} kB"


class Reader:
    """Reads what the server answers each attacking socket, until it closes them."""

    def __init__(self, socks: list[socket.socket]) -> None:
        self.selector = selectors.DefaultSelector()
        self.answers: dict[int, bytes] = {i: b"" for i in range(len(socks))}
        self.open: set[int] = set(range(len(socks)))
        for i, sock in enumerate(socks):
            self.selector.register(sock, selectors.EVENT_READ, i)

    def poll(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            i = int(key.data)
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            self.answers[i] += data
            if not data:
                self.open.discard(i)
                self.selector.unregister(sock)
                sock.close()

    def answered(self, i: int) -> bool:
        return bool(self.answers[i])

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()


def test_500_slow_connections_are_cut_at_the_header_deadline(web: Web) -> None:
    head = b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    socks = [connect(web, head) for _ in range(500)]
    started = time.monotonic()
    reader = Reader(socks)
    try:
        rss = web.rss_kb()
        delivery_during(web, "500 slow connections")
        # a header line at a time on each (about one a second), until the server closes them all
        deadline = started + HEADER_TIMEOUT + 20
        while reader.open and time.monotonic() < deadline:
            for i in list(reader.open):
                if not reader.answered(i):
                    with contextlib.suppress(OSError):
                        socks[i].send(b"X-Slow: 1\r\n")
            rss = max(rss, web.rss_kb())
            reader.poll(1.0)
        assert reader.open == set(), f"{len(reader.open)} slow connections still open"
        took = time.monotonic() - started
    finally:
        reader.close()
    statuses = {status_of(answer) for answer in reader.answers.values()}
    assert statuses == {408}
    assert b'"code":"header_timeout"' in reader.answers[0]
    web.figures.append(
        f"500 slow connections: all answered 408 and closed {took:.1f}s after opening "
        f"(HOOKSPAWN_HEADER_TIMEOUT={HEADER_TIMEOUT}s); VmRSS at most {rss / 1024:.0f} MB"
    )
    assert rss < RSS_BOUND_KB
    assert_clean_log(web)


def assert_clean_log(web: Web) -> None:
    """A refused attack is routine: nothing in the web's log reads as an error."""
    # a round trip through the event loop: what the refusals woke up has run by its answer
    assert loopback.get(f"{web.url}/healthz", timeout=10).status_code == 200
    text = web.proc.log_text()
    for sign in ("Traceback", "Exception in ASGI application", "ERROR"):
        assert sign not in text, text[-3000:]


def send_until_answered(sock: socket.socket, total: int, chunk: bytes) -> tuple[bytes, int]:
    """Send up to `total` bytes of `chunk`s, stopping once the server answers; (answer, sent)."""
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    sent, answer = 0, b""
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            events = selector.select(1.0)
            if any(mask & selectors.EVENT_READ for _, mask in events):
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                answer += data
                if not data or b"\r\n\r\n" in answer:
                    break
            elif sent < total and events:
                try:
                    sent += sock.send(chunk[: total - sent])
                except BlockingIOError:
                    pass
                except OSError:
                    break
            elif sent >= total:
                selector.modify(sock, selectors.EVENT_READ)
    finally:
        selector.close()
    return answer, sent


def test_huge_headers_are_refused_431(web: Web) -> None:
    attacks = {  # name → (head, what is repeated after it, how much of it)
        "a 50 MB header line": (
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ",
            b"a" * 65536,
            50_000_000,
        ),
        "10,000 header lines": (
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",
            b"X-Many: 1\r\n" * 6000,
            10_000 * len(b"X-Many: 1\r\n"),
        ),
    }
    results: dict[str, tuple[bytes, int]] = {}

    def run(name: str, head: bytes, chunk: bytes, total: int) -> None:
        sock = connect(web, head)
        try:
            results[name] = send_until_answered(sock, total, chunk)
        finally:
            sock.close()

    threads = [
        threading.Thread(target=run, args=(name, head, chunk, total))
        for name, (head, chunk, total) in attacks.items()
    ]
    for thread in threads:
        thread.start()
    delivery_during(web, "a 50 MB header and 10,000 headers")
    for thread in threads:
        thread.join(60)
    for name, (answer, sent) in results.items():
        assert status_of(answer) == 431, name
        assert b'"code":"headers_too_large"' in answer
        web.figures.append(f"{name}: 431 after {sent / 1024:.0f} KiB sent")
    assert set(results) == set(attacks)
    assert results["a 50 MB header line"][1] < 50_000_000  # answered long before the end
    assert web.peak_kb() < RSS_BOUND_KB
    assert_clean_log(web)


def test_30_held_25mb_bodies_stay_within_the_budget(web: Web) -> None:
    size = 25_000_000
    held_back = 1024  # never sent: the bodies are held open
    heads = [
        b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"X-GitHub-Event: issues\r\nX-GitHub-Delivery: held-%d\r\nContent-Length: %d\r\n\r\n"
        % (i, size)
        for i in range(30)
    ]
    socks = [connect(web, head) for head in heads]
    reader = Reader(socks)
    chunk = memoryview(b"{" * 262144)
    sent = [0] * len(socks)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            reader.poll(0)
            busy = [i for i in reader.open if not reader.answered(i) and sent[i] < size - held_back]
            if not busy:
                break
            for i in busy:
                try:
                    sent[i] += socks[i].send(chunk[: size - held_back - sent[i]])
                except BlockingIOError:
                    pass
                except OSError:
                    reader.poll(0.1)
        rss = web.rss_kb()
        delivery_during(web, "30 held 25 MB bodies")
        # the bodies held are cut at their deadline, which gives their budget back
        deadline = time.monotonic() + BODY_TIMEOUT + 20
        while reader.open and time.monotonic() < deadline:
            reader.poll(0.5)
        assert reader.open == set(), f"{len(reader.open)} held bodies still open"
    finally:
        reader.close()
    # the budget is taken as bytes arrive: a body is refused when its next bytes do not fit
    # (what it held given back), so the bodies still held fit the budget together
    statuses = {i: status_of(answer) for i, answer in reader.answers.items()}
    refused = [i for i, status in statuses.items() if status == 503]
    admitted = [i for i, status in statuses.items() if status == 408]
    assert sorted(refused + admitted) == list(range(len(socks))), statuses
    assert refused and admitted, statuses
    for i in refused:
        assert b"retry-after: " in reader.answers[i].lower()
        assert b'"code":"body_budget_exceeded"' in reader.answers[i]
    for i in admitted:
        assert b'"code":"body_timeout"' in reader.answers[i]
    web.figures.append(
        f"30 held 25 MB bodies: {len(admitted)} held (HOOKSPAWN_BODY_BUDGET {BUDGET >> 20} MiB)"
        f" and cut 408 at HOOKSPAWN_BODY_TIMEOUT={BODY_TIMEOUT}s, {len(refused)} answered 503 "
        f"with Retry-After; VmRSS {rss / 1024:.0f} MB while held, "
        f"peak {web.peak_kb() / 1024:.0f} MB"
    )
    assert rss < RSS_BOUND_KB
    assert web.peak_kb() < RSS_BOUND_KB
    assert signed_delivery(web.url, DELIVERY)[0] == 202  # the budget is free again
    assert_clean_log(web)


def test_idle_declared_bodies_take_no_budget_from_a_signed_delivery(web: Web) -> None:
    """Body budget is taken as bytes arrive: 11 connections declaring 25 MiB each (275 MiB,
    past the 256 MiB budget) and sending one byte hold 11 bytes of it, not the budget."""
    size = 25 * 1024 * 1024
    heads = [
        b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"X-GitHub-Event: issues\r\nX-GitHub-Delivery: idle-%d\r\nContent-Length: %d\r\n\r\n{"
        % (i, size)
        for i in range(11)
    ]
    assert len(heads) * size > BUDGET
    socks = [connect(web, head) for head in heads]
    reader = Reader(socks)
    try:
        reader.poll(0.5)
        assert not any(reader.answered(i) for i in range(len(socks)))  # all still held open
        delivery = f"beside-idle-{uuid.uuid4().hex[:12]}"
        with loopback.Client(base_url=web.url, timeout=30) as client:
            answer = client.post(
                "/webhooks/github",
                content=DELIVERY,
                headers=webhook_headers(DELIVERY, "issues", delivery),
            )
            recorded = client.get(
                f"/deliveries/{delivery}", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
            )
        held = [i for i in range(len(socks)) if not reader.answered(i)]
        web.figures.append(
            f"11 idle 25 MiB declarations: signed delivery {answer.status_code}, "
            f"{len(held)} still held"
        )
    finally:
        reader.close()
    assert answer.status_code == 202, answer.text
    assert answer.json()["deliveryId"] == delivery
    assert recorded.status_code == 200, recorded.text
    assert recorded.json()["deliveryId"] == delivery
    assert held == list(range(len(socks)))  # refused nobody to make room


def test_300mb_login_upload_is_refused_unread(web: Web) -> None:
    size = 300_000_000
    attacks = {
        "multipart, 300 MB declared": (
            b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\n" % size,
            415,
        ),
        "form-encoded, 300 MB declared": (
            b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n" % size,
            413,
        ),
        "form-encoded, 300 MB chunked": (
            b"Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n",
            413,
        ),
        # a small form never finished: the handler is reading it when the deadline cuts it
        "form-encoded, 100 bytes declared, 10 sent": (
            b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n",
            408,
        ),
    }
    chunk = b"10000\r\n" + b"t" * 0x10000 + b"\r\n"
    results: dict[str, tuple[bytes, int]] = {}

    def run(name: str, headers: bytes) -> None:
        sock = connect(web, b"POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\n")
        total = 10 if "10 sent" in name else size
        try:
            results[name] = send_until_answered(sock, total, chunk)
        finally:
            sock.close()

    threads = [
        threading.Thread(target=run, args=(name, headers)) for name, (headers, _) in attacks.items()
    ]
    for thread in threads:
        thread.start()
    delivery_during(web, "a 300 MB multipart login")
    for thread in threads:
        thread.join(60)
    spool = web.proc.log.parent / "tmp"
    for name, (_, status) in attacks.items():
        answer, sent = results[name]
        assert status_of(answer) == status, (name, answer[:300])
        assert b"set-cookie" not in answer.lower()
        assert sent < size
        web.figures.append(f"/ui/login, {name}: {status} after {sent / 1024:.0f} KiB sent")
    assert list(spool.iterdir()) == []  # nothing spooled to disk
    assert web.peak_kb() < RSS_BOUND_KB
    assert_clean_log(web)


def test_connections_past_the_cap_are_answered_503(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    cap = 20
    with web_process(tmp_path / "capped", redis_server.url, MAX_CONNECTIONS=str(cap)) as (_, url):
        port = int(urlsplit(url).port or 0)
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(cap)]
        try:
            # the listener accepts the connections one by one: wait until all of them count
            wait_for(lambda: over_the_cap(port) is not None, timeout=20)
            answer = over_the_cap(port)
            assert answer is not None and status_of(answer) == 503
            assert b"retry-after: 1" in answer.lower()
            assert b'"code":"too_many_connections"' in answer
        finally:
            for sock in held:
                sock.close()
        wait_for(lambda: signed_delivery(url, DELIVERY)[0] == 202, timeout=20)


def over_the_cap(port: int) -> bytes | None:
    """What a new connection is answered before it sends anything, or None when it is kept."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.settimeout(0.5)
        try:
            answer = sock.recv(65536)
        except TimeoutError:
            return None
        return answer or None


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`hookspawn serve` (embedded Redis, web, worker; sessions handed to a dispatch URL, so
    no runner): its URL."""
    env = environment(
        {"HOOKSPAWN_DISPATCH_URL": "http://127.0.0.1:9/sessions", "HOOKSPAWN_LOG_LEVEL": "WARNING"}
    )
    with serving(tmp_path, env) as started:
        yield started.url


def test_serve_runs_its_web_with_the_same_limits(served: str) -> None:
    port = int(urlsplit(served).port or 0)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        sock.setblocking(False)
        answer, sent = send_until_answered(sock, 5_000_000, b"a" * 65536)
    assert status_of(answer) == 431, answer[:300]
    assert sent < 5_000_000


def test_limit_settings_take_sizes_and_proxy_networks() -> None:
    read = Settings.model_validate(
        {"body_budget": "64M", "max_header_bytes": "16KiB", "trusted_proxies": "10.0.0.0/8, ::1"}
    )
    assert (read.body_budget, read.max_header_bytes) == (64 * 1024**2, 16 * 1024)
    assert read.trusted_proxies == ["10.0.0.0/8", "::1"]
    assert Settings.model_fields["body_budget"].default == BUDGET  # what the attacks run with
    for field_name, value, complaint in (
        ("body_budget", "lots", "not a size: 'lots'"),
        ("trusted_proxies", "10.0.0.1, proxy.local", "not an IP address or network: 'proxy.local'"),
    ):
        with pytest.raises(ValidationError, match=complaint):
            Settings.model_validate({field_name: value})
