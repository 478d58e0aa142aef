"""The failover drill: a Redis primary, a replica and three sentinels (real redis-server
processes), `hookspawn web` and two `hookspawn worker`s finding the primary through the
sentinels, the GitHub stand-in and a dispatch target; a steady stream of deliveries while the
primary is killed with SIGKILL. Run by tests/faults/test_sentinel_failover.py (with
HOOKSPAWN_REDIS_MIN_REPLICAS_ACK=1) and by bench/failover.py (either setting, reported)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import redis

from tests.conftest import wait_for, webhook_headers
from tests.dispatch_target import DispatchTarget
from tests.faults.conftest import (
    AGENTS,
    SECRETS,
    Cluster,
    FaultStandin,
    IntakeAnswer,
    web_client,
)
from tests.redis_sentinels import SentinelGroup
from tests.workers.delivery.pipeline.conftest import write_agents
from triggers.spawn_rules import trigger_spawn_id
from workers import keys

#: one delivery in this many is a pull_request opened (two spawns); the others are closed
#: ones no trigger fires on, so the workers keep up with the stream on a shared machine
FIRING_EVERY = 10


@dataclass
class Drill:
    """What one run of the drill saw."""

    ack: int
    rate: float
    started_at: float = 0.0
    stopped_at: float = 0.0
    answers: list[IntakeAnswer] = field(default_factory=list)
    killed_at: float = 0.0
    switched_at: float = 0.0
    #: deliveries answered 202 that the store does not hold after the failover
    lost: list[str] = field(default_factory=list)
    #: deliveries answered 202 not processed (status, or still pending)
    unsettled: list[str] = field(default_factory=list)
    #: spawn ids of deliveries answered 202 never created at the dispatch target
    missing: list[str] = field(default_factory=list)
    #: spawn ids created more than once, and ones no delivery sent could have made
    duplicated: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    spawns: int = 0
    settled_in: float = 0.0

    @property
    def accepted(self) -> list[IntakeAnswer]:
        return [a for a in self.answers if a.status == 202]

    def refused(self) -> list[IntakeAnswer]:
        """Answered other than 202 (503, or no answer) at or after the kill."""
        return [a for a in self.answers if a.status != 202 and a.answered >= self.killed_at]

    def gap(self) -> tuple[float, float]:
        """(first refusal after the kill → first 202 after it, seconds; kill → that 202)."""
        refused = self.refused()
        if not refused:
            return 0.0, 0.0
        first = min(a.answered for a in refused)
        # the first 202 to a delivery sent after that refusal (one sent before it may be
        # answered 202 later: it was recorded before the kill)
        back = min(
            (a.answered for a in self.answers if a.status == 202 and a.sent > first),
            default=float("nan"),
        )
        return back - first, back - self.killed_at

    def report(self) -> str:
        gap, since_kill = self.gap()
        statuses = Counter(a.status for a in self.answers)
        sent_rate = len(self.answers) / max(self.stopped_at - self.started_at, 1e-9)
        return (
            f"failover drill, MIN_REPLICAS_ACK={self.ack}, {self.rate:.0f} deliveries/s asked, "
            f"{sent_rate:.0f}/s sent: {len(self.answers)} sent "
            f"({dict(sorted(statuses.items()))}); primary killed, "
            f"sentinels switched after {self.switched_at - self.killed_at:.1f}s; "
            f"{len(self.refused())} refused during the gap of {gap:.2f}s (first refusal to "
            f"first 202; {since_kill:.2f}s from the kill); of {len(self.accepted)} answered "
            f"202: {len(self.lost)} lost, {len(self.unsettled)} unsettled; {self.spawns} "
            f"spawns, {len(self.missing)} missing, {len(self.duplicated)} duplicated, "
            f"{len(self.unexpected)} unexpected; settled {self.settled_in:.0f}s after the "
            "stream"
        )


class SentinelCluster(Cluster):
    """The fault harness's Cluster on a Sentinel-watched primary and replica, two workers."""

    def __init__(
        self,
        root: Path,
        github: FaultStandin,
        target: DispatchTarget,
        *,
        ack: int,
        ack_timeout: str = "100ms",
        lease: float = 3.0,
    ) -> None:
        super().__init__(root, github, target, lease=lease, concurrency=2)
        self.group = SentinelGroup(root / "sentinel-group", replicas=1, sentinels=3)
        self.ack = ack
        self.ack_timeout = ack_timeout
        self.workers: list[Any] = []
        self.firing: set[str] = set()  # delivery ids of the pull_request opened ones

    def env(self) -> dict[str, str]:
        env = super().env()
        del env["HOOKSPAWN_REDIS_URL"]
        env.update(self.group.env())
        env["HOOKSPAWN_REDIS_MIN_REPLICAS_ACK"] = str(self.ack)
        env["HOOKSPAWN_REDIS_ACK_TIMEOUT"] = self.ack_timeout
        return env

    def start(self) -> SentinelCluster:
        self.key_path.write_text(self.github.private_key_pem)
        write_agents(self.root, AGENTS)
        self.group.start()
        self.start_web()
        self.workers = [self.start_worker(), self.start_worker()]
        self.loaded()
        return self

    def stop(self) -> None:
        super().stop()
        self.group.stop()

    def store(self) -> redis.Redis:
        return self.group.primary().client()

    def pending(self) -> set[str]:
        client = self.store()
        try:
            members = cast(list[bytes], client.zrange(keys.PENDING, 0, -1))
        finally:
            client.close()
        return {m.decode() for m in members}

    def statuses(self) -> dict[str, str]:
        """Every delivery sent → its status in the store (absent: not recorded)."""
        client = self.store()
        try:
            ids = list(self.sent)
            pipe = client.pipeline(transaction=False)
            for delivery in ids:
                pipe.hget(keys.delivery(delivery), "status")
            found = pipe.execute()
        finally:
            client.close()
        return {d: s.decode() for d, s in zip(ids, found, strict=True) if s is not None}

    # the stream ----------------------------------------------------------------------------
    def send_one(self, client: httpx.Client, fires: bool) -> IntakeAnswer:
        body = self.pr_body()
        if not fires:
            body["action"] = "closed"
        delivery = f"s-{uuid.uuid4().hex[:20]}"
        if fires:
            with self._lock:
                self.firing.add(delivery)
        raw = json.dumps(body).encode()
        headers = webhook_headers(raw, "pull_request", delivery, secret=SECRETS[0])
        sent = time.monotonic()
        try:
            code = client.post("/webhooks/github", content=raw, headers=headers).status_code
        except httpx.HTTPError:
            code = 0
        answer = IntakeAnswer(delivery, "pull_request", code, sent, time.monotonic())
        with self._lock:
            self.answers.append(answer)
            self.sent[delivery] = "pull_request"
            if code == 202:
                self.accepted[delivery] = "pull_request"
        return answer

    def expected_spawns(self, delivery: str) -> set[str]:
        if delivery not in self.firing:
            return set()
        return {trigger_spawn_id(delivery, agent, key) for agent, key in self.spawn_keys}


class Sender:
    """`threads` threads sending at `rate` deliveries a second in all, until stopped."""

    def __init__(self, cluster: SentinelCluster, rate: float, threads: int = 8) -> None:
        self.cluster = cluster
        self.interval = threads / rate
        self._stop = threading.Event()
        self._count = 0
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)
        ]

    def _fires(self) -> bool:
        with self._lock:
            self._count += 1
            return self._count % FIRING_EVERY == 0

    def _run(self, n: int) -> None:
        next_at = time.monotonic() + n * self.interval / len(self._threads)
        with web_client(self.cluster.url) as client:
            while not self._stop.is_set():
                self.cluster.send_one(client, self._fires())
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))

    def __enter__(self) -> Sender:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


def run_drill(
    cluster: SentinelCluster,
    *,
    rate: float = 120.0,
    before: float = 3.0,
    after: float = 2.0,
    settle_timeout: float = 180.0,
) -> Drill:
    """Stream at `rate`, SIGKILL the primary after `before` seconds, start it again as the
    new primary's replica once the sentinels switched, stream on until `after` seconds past
    the first 202 after the kill; then wait until every 202 is processed and audit."""
    drill = Drill(ack=cluster.ack, rate=rate, started_at=time.monotonic())
    with Sender(cluster, rate):
        time.sleep(before)  # the steady stream before the kill
        old = cluster.group.primary_port()
        drill.killed_at = time.monotonic()
        killed = cluster.group.kill_primary()
        primary = cluster.group.wait_failover(old)
        drill.switched_at = time.monotonic()
        # started again as a supervisor would, asking the sentinels for the primary first
        killed.start("--replicaof", "127.0.0.1", str(primary))

        def back() -> bool:
            with cluster._lock:
                return any(a.status == 202 and a.sent > drill.switched_at for a in cluster.answers)

        wait_for(back, 60.0, 0.05, what="a 202 after the failover")
        time.sleep(after)
    drill.answers = list(cluster.answers)
    stopped = drill.stopped_at = time.monotonic()
    audit(cluster, drill, settle_timeout)
    drill.settled_in = time.monotonic() - stopped
    return drill


def unsettled_report(cluster: SentinelCluster, drill: Drill) -> str:
    """What the store holds of the first unsettled deliveries (lease left, sweeps, attempts)
    and the workers' warnings and errors: where the stream stopped."""
    client = cluster.store()
    now = time.time()
    lines = [f"unsettled ({len(drill.unsettled)}): {drill.unsettled[:10]}"]
    try:
        for entry in drill.unsettled[:5]:
            delivery = entry.split("=", 1)[0]
            score = client.zscore(keys.PENDING, delivery)
            swept = client.hget(keys.SWEPT, delivery)
            fields = client.hmget(keys.delivery(delivery), "attempts", "claims", "error")
            left = "not pending" if score is None else f"lease {score - now:+.1f}s"
            lines.append(f"  {delivery}: {left}, swept {swept!r}, attempts/claims/error {fields}")
        lines.append(f"  queue lengths: { {k: client.llen(k) for k in ('celery', 'hookspawn')} }")
    finally:
        client.close()
    for proc in cluster.procs:
        if proc.name != "worker":
            continue
        said = [
            line
            for line in proc.log_text().splitlines()
            if "WARNING" in line or "ERROR" in line or "Traceback" in line
        ]
        lines.append(f"  {proc.log.name}: {len(said)} warning/error lines, last ones:")
        lines.extend(f"    {line[:300]}" for line in said[-15:])
    return "\n".join(lines)


def audit(cluster: SentinelCluster, drill: Drill, timeout: float) -> None:
    """Every 202 recorded, processed, its spawns created once; nothing created twice."""
    accepted = [a.delivery for a in drill.accepted]
    statuses = cluster.statuses()
    drill.lost = [d for d in accepted if d not in statuses]
    held = [d for d in accepted if d in statuses]

    def settled() -> bool:
        now, pending = cluster.statuses(), cluster.pending()
        drill.unsettled = [
            f"{d}={now.get(d)}" for d in held if now.get(d) != "processed" or d in pending
        ]
        return not drill.unsettled

    try:
        wait_for(settled, timeout, 0.5, what=lambda: unsettled_report(cluster, drill))
    except BaseException:
        if not drill.lost:
            raise  # with losses (MIN_REPLICAS_ACK=0) the report says what was not settled
    created = cluster.watch.created()
    expected = {s for d in held for s in cluster.expected_spawns(d)}
    possible = {s for d in cluster.sent for s in cluster.expected_spawns(d)}
    # a spawn whose delivery is settled must exist; one of a lost delivery may or may not
    drill.missing = sorted(expected - set(created))
    drill.duplicated = sorted(f"{key} x{n}" for key, n in created.items() if n > 1)
    drill.unexpected = sorted(set(created) - possible)
    drill.spawns = sum(created.values())
