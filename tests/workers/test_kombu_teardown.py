"""A broker connection torn down after Redis is gone, as Celery's consumer tears it down
(workers.redis_connection.close_channels_without_their_connection_in_kombu).

The scene is a worker's at the moment its Redis dies: the consumer's channel, made first,
holds a delivery not yet acknowledged (acks late) and has a BRPOP in flight; the remote
control's channel consumes a fanout queue that goes with it. Celery then collects the
connection and closes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kombu as untyped_kombu
import pytest
from kombu.transport import redis as kombu_redis

from hookspawn.serve.redis_server import RedisServer
from tests.suite_marks import marks_tests
from workers.redis_connection import close_channels_without_their_connection_in_kombu

#: kombu has no type hints: its objects are Any here
kombu: Any = untyped_kombu
REDIS_CHANNEL: Any = kombu_redis.Channel


@pytest.fixture
@marks_tests("stack")
def collected(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """The connection once Celery's consumer collected it, Redis gone, and its consumer's
    channel."""
    server = RedisServer(tmp_path / "redis").start()
    connection = kombu.Connection(server.url)
    try:
        channel = connection.default_channel  # the consumer's, made first
        control = connection.channel()
        box = kombu.Queue("w1.pidbox", kombu.Exchange("pidbox", type="fanout"), auto_delete=True)
        box(control).declare()
        control.basic_consume(box.name, True, lambda message: None, "control")
        tasks = kombu.Queue("tasks", kombu.Exchange("tasks", type="direct"), routing_key="tasks")
        tasks(channel).declare()
        for n in range(2):
            kombu.Producer(channel).publish(
                {"n": n}, exchange=tasks.exchange, routing_key="tasks", declare=[tasks]
            )
        channel.basic_qos(0, 10, False)
        taken: list[Any] = []
        channel.basic_consume("tasks", False, taken.append, "consumer")
        while not taken:
            connection.drain_events(timeout=5)
        channel._brpop_start()  # the event loop's next BRPOP, in flight
        server.kill()
        connection.collect(socket_timeout=2)  # what the consumer does first
        # the scene arises with this kombu: the consumer's channel outlived its transport
        assert not channel.closed
        yield connection, channel
    finally:
        server.stop()


def test_the_second_close_ends_as_a_connection_error_and_the_channel_closes(
    collected: tuple[Any, Any],
) -> None:
    close_channels_without_their_connection_in_kombu()
    connection, channel = collected
    connection.close()  # what the consumer does next: before the guard, AttributeError
    assert channel.closed


def test_without_the_guard_kombu_stops_the_worker_there(
    collected: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why the guard is there: with kombu as it is pinned, the second close raises
    AttributeError, which Celery takes as unrecoverable. A kombu that no longer does fails
    this test: the guard can then go."""
    close_channels_without_their_connection_in_kombu()  # installed, then taken away here
    guarded = REDIS_CHANNEL._connparams
    monkeypatch.setattr(REDIS_CHANNEL, "_connparams", guarded.__wrapped__)
    connection, _ = collected
    with pytest.raises(AttributeError, match="hostname"):
        connection.close()
