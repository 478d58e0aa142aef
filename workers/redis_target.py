"""Where a process finds its store, and how many replicas a write waits for: values the
settings carry, so they import no Redis client (a `check` or a `doctor` builds settings and
never talks to Redis). The clients themselves are made in workers/redis_connection.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workers.errors import StoreNotReplicated

if TYPE_CHECKING:
    from redis.sentinel import Sentinel

__all__ = ["NO_ACK", "SENTINEL_TIMEOUT", "RedisTarget", "ReplicaAck", "Sentinels"]

#: how long a question to one sentinel may take (they answer from memory, on loopback or
#: a LAN: a sentinel slower than this is treated as down and the next one is asked)
SENTINEL_TIMEOUT = 1.0


@dataclass(frozen=True)
class Sentinels:
    """A primary found through Redis Sentinel: the sentinels' addresses, the name they
    know it by, the sentinels' own password and the primary's (and its replicas')."""

    addresses: tuple[tuple[str, int], ...]
    master: str
    sentinel_password: str | None = None
    password: str | None = None

    def __repr__(self) -> str:  # never the passwords
        where = ",".join(f"{host}:{port}" for host, port in self.addresses)
        return f"Sentinels({self.master!r} via {where})"

    def describe(self) -> str:
        """`mymaster via 10.0.0.1:26379,10.0.0.2:26379`: for messages, without passwords."""
        return f"{self.master} via " + ",".join(f"{h}:{p}" for h, p in self.addresses)

    def sentinel_options(self) -> dict[str, Any]:
        """How each sentinel is asked: its password, each question bounded in time."""
        return {
            "password": self.sentinel_password,
            "socket_timeout": SENTINEL_TIMEOUT,
            "socket_connect_timeout": SENTINEL_TIMEOUT,
        }

    def sentinel(self) -> Sentinel:
        """A Sentinel client over these addresses."""
        from redis.sentinel import Sentinel  # settings carry this class: redis only when used

        return Sentinel(  # type: ignore[no-untyped-call]
            list(self.addresses), sentinel_kwargs=self.sentinel_options()
        )


#: where a process finds its store: a Redis URL, or a primary through its sentinels
RedisTarget = str | Sentinels


@dataclass(frozen=True)
class ReplicaAck:
    """How many replicas must acknowledge a write (`WAIT`), and how long to wait for them."""

    replicas: int = 0
    timeout_ms: int = 50

    def check(self, acknowledged: int, what: str) -> None:
        """Raise StoreNotReplicated when fewer than `replicas` replicas acknowledged."""
        if acknowledged < self.replicas:
            raise StoreNotReplicated(
                f"{what} is on the Redis primary but only {acknowledged} of the "
                f"{self.replicas} replicas HOOKSPAWN_REDIS_MIN_REPLICAS_ACK asks for "
                f"acknowledged it within {self.timeout_ms} ms",
                acknowledged=acknowledged,
                wanted=self.replicas,
            )


#: no replica asked for: a write counts once the primary answered it
NO_ACK = ReplicaAck(0)
