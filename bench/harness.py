"""Shared parts of the pipeline and load benchmarks: processes, agents, traffic, drains, RSS.

`Bench` owns one temporary directory with a real redis-server (AOF everysec, as compose.yaml
runs it), the GitHub API stand-in (tests/github_standin.py, in this process, minting tokens),
1,000 generated agents and the App key, and starts `hookspawn web` / `hookspawn worker` (and a
Celery no-op worker) as subprocesses in their own process groups, all stopped on exit, on
Ctrl-C and on SIGTERM. The no-op worker is this file run as a script:

    .venv/bin/python bench/harness.py noop-worker --concurrency 2   (HOOKSPAWN_REDIS_URL set)
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import os
import signal
import statistics
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, cast

# Run as a script or imported by a script in bench/: import the tree this file is in.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from hookspawn.serve.redis_server import RedisServer, free_port  # noqa: E402
from tests.github_standin import GitHubStandin  # noqa: E402
from tests.procs import (  # noqa: E402
    HOOKSPAWN,
    Proc,
    environment,
    launch,
    process_tree,
    status_kb,
    wait_answering,
    wait_ready,
)
from triggers.signature import sign  # noqa: E402
from triggers.spawn_rules import trigger_spawn_id  # noqa: E402
from workers import keys  # noqa: E402
from workers.celery_app import PROCESS_DELIVERY, celery_config  # noqa: E402
from workers.delivery.deliveries import DeliveryStore  # noqa: E402
from workers.delivery.record import NewDelivery  # noqa: E402
from workers.delivery.task_message import TaskMessages  # noqa: E402
from workers.github.connections import ConnectionStore  # noqa: E402
from workers.session.records import parse_session  # noqa: E402

WEBHOOKS = ROOT / "tests" / "webhooks"
SECRET = "bench-webhook-secret"
QUEUE = "hookspawn"  # celery_config's task_default_queue: the broker list
STAGING = "bench:staging"  # messages wait here until the timed RENAME onto QUEUE
UNACKED = "unacked"  # kombu's Redis transport: delivered, not yet acked
NOOP_TASK = "bench.noop"
HOOKSPAWN_DB, NOOP_DB = 0, 1

INSTALLATION = 957387
ACCOUNT = "Codertocat"
REPO_ID, REPO = 186853002, "Codertocat/Hello-World"
OTHER_REPO_ID, OTHER_REPO = 186853007, "Codertocat/Space"

FIRING_AGENT = "bench-pr-review"
OTHER_EVENTS = (
    "push",
    "issues",
    "issue_comment",
    "check_run",
    "check_suite",
    "workflow_run",
    "workflow_job",
    "release",
    "create",
    "delete",
    "pull_request_review",
    "pull_request_review_comment",
    "discussion",
    "deployment_status",
    "status",
)
STARTUP_TIMEOUT = 90.0


# --------------------------------------------------------------------------- agents


def agent_files(count: int = 1000, other_pr: int = 9) -> dict[str, str]:
    """`count` agents: one fires on every PR opened/synchronize/reopened of Hello-World (a
    githubApp mount with a templated PR ref); `other_pr` more listen to pull_request on
    other repositories (never fire here); the rest listen to other events."""
    files = {
        "fragments/environments/runtime.yaml": """
            harness: claude-code
            environment:
              name: runtime
              image: {kind: preset, name: node24}
        """,
        f"agents/{FIRING_AGENT}.yaml": f"""
            name: {FIRING_AGENT}
            imports: [../fragments/environments/runtime.yaml]
            mounts:
              - kind: git
                repository: {REPO}
                mountPath: /workspace/hello
                ref: refs/pull/{{{{payload.github.pullRequest.number}}}}/head
                auth:
                  kind: githubApp
                  capabilities: {{contents: read, pullRequests: write}}
            triggers:
              - event: pull_request
                name: review
                actions: [opened, synchronize, reopened]
                displayTitle: "Review #{{{{ github.pullRequest.number }}}}: {{{{ github.pullRequest.title }}}}"
                initialPrompt: "Review {{{{ github.pullRequest.htmlUrl }}}}"
        """,  # noqa: E501
    }
    for i in range(count - 1):
        event = "pull_request" if i < other_pr else OTHER_EVENTS[i % len(OTHER_EVENTS)]
        name = f"bench-{event.replace('_', '-')}-{i:04d}"
        files[f"agents/{name}.yaml"] = f"""
            name: {name}
            imports: [../fragments/environments/runtime.yaml]
            mounts:
              - kind: git
                repository: acme-{i % 37}/repo-{i}
                mountPath: /workspace/repo
                ref: main
                auth: {{kind: githubApp, capabilities: {{contents: read}}}}
            triggers:
              - event: {event}
                name: t{i}
                actions: [opened, created, completed, synchronize]
                displayTitle: "{name} on {{{{ github.repository.fullName }}}}"
        """
    return files


def write_agents(auto: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = auto / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def firing_trigger_key(auto: Path) -> str:
    """The trigger key of the one agent that fires (compiled as the worker compiles it)."""
    from agents import compile_dir

    result = compile_dir(auto)
    if not result.ok:
        raise RuntimeError(f"generated agents do not compile: {result.errors[:3]}")
    agent = result.agent(FIRING_AGENT)
    assert agent is not None and len(agent.triggers) == 1
    return str(agent.triggers[0].key)


# --------------------------------------------------------------------------- payloads


def payload(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((WEBHOOKS / name).read_text())
    return loaded


@dataclass(frozen=True)
class Body:
    """One signed webhook body and whether it fires the bench agent."""

    event: str
    raw: bytes
    signature: str
    fires: bool
    action: str | None = None


def signed(event: str, document: dict[str, Any], fires: bool) -> Body:
    raw = json.dumps(document).encode()
    return Body(event, raw, sign(raw, SECRET), fires, document.get("action"))


def pr_bodies(variants: int = 8) -> list[Body]:
    """Real pull_request opened/synchronize/reopened payloads, PR numbers and titles varied."""
    out = []
    for i, action in zip(range(variants), itertools.cycle(("opened", "synchronize", "reopened"))):
        document = payload(f"pull_request/{action}.payload.json")
        number = 100 + i
        document["number"] = number
        document["pull_request"]["number"] = number
        document["pull_request"]["title"] = f"bench change #{number}"
        out.append(signed("pull_request", document, True))
    return out


#: the load mix, per 20 deliveries: 14 PR events that fire the agent, 6 that fire none
MIX: tuple[tuple[str, str, bool, int], ...] = (
    ("pull_request", "pull_request/opened.payload.json", True, 8),
    ("pull_request", "pull_request/synchronize.payload.json", True, 4),
    ("pull_request", "pull_request/reopened.payload.json", True, 2),
    ("pull_request", "pull_request/labeled.payload.json", False, 1),
    ("pull_request", "pull_request/closed.payload.json", False, 1),
    ("issues", "issues/opened.payload.json", False, 1),
    ("issue_comment", "issue_comment/created.payload.json", False, 1),
    ("push", "push/payload.json", False, 1),
    ("check_run", "check_run/completed.payload.json", False, 1),
)


def mix_bodies() -> list[Body]:
    """One cycle of the load mix (20 bodies, interleaved), each signed once."""
    slots: list[Body] = []
    for event, name, fires, weight in MIX:
        document = payload(name)
        for k in range(weight):
            if event == "pull_request":
                document = copy.deepcopy(document)
                number = 200 + len(slots) + k
                document["number"] = number
                document["pull_request"]["number"] = number
            slots.append(signed(event, document, fires))
    # interleave so firing and non-firing deliveries alternate through the cycle
    return [slots[(i * 7) % len(slots)] for i in range(len(slots))]


# --------------------------------------------------------------------------- processes


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class Bench:
    """A temporary deployment: redis-server, the GitHub stand-in, agents, web/worker processes."""

    def __init__(self, *, agents: int = 1000, prefix: str = "hookspawn-bench-") -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)
        self.root = Path(self._tmp.name)
        self.agents = agents
        self.redis = RedisServer(self.root / "redis", appendfsync="everysec")
        self.github = GitHubStandin()
        self.key_path = self.root / "app.pem"
        self.auto = self.root / ".auto"
        self.procs: list[Proc] = []
        #: more HOOKSPAWN_* settings for the web and worker processes (e.g. a short retention)
        self.extra_env: dict[str, str] = {}
        self.trigger_key = ""
        self._old_term: Any = None
        self._old_int: Any = None

    # lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Bench:
        self._old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        # Ctrl-C stops the run and cleans up, also when started in the background (where a
        # shell has SIGINT ignored)
        self._old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            self.redis.start()
            self.github.start()
            self.github.add_installation(
                INSTALLATION, ACCOUNT, repositories={REPO_ID: REPO, OTHER_REPO_ID: OTHER_REPO}
            )
            self.key_path.write_text(self.github.private_key_pem)
            write_agents(self.auto, agent_files(self.agents))
            self.trigger_key = firing_trigger_key(self.auto)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs.clear()
        self.github.stop()
        self.redis.stop()
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)
            signal.signal(signal.SIGINT, self._old_int)
        self._tmp.cleanup()

    def url(self, db: int = HOOKSPAWN_DB) -> str:
        return self.redis.url.rsplit("/", 1)[0] + f"/{db}"

    def client(self, db: int = HOOKSPAWN_DB) -> redis.Redis:
        return redis.Redis.from_url(self.url(db))

    def env(self, db: int = HOOKSPAWN_DB) -> dict[str, str]:
        return environment(
            {
                "HOOKSPAWN_REDIS_URL": self.url(db),
                "HOOKSPAWN_WEBHOOK_SECRET": SECRET,
                "HOOKSPAWN_AGENTS_DIR": str(self.auto),
                "HOOKSPAWN_GITHUB_APP_ID": self.github.app_id,
                "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH": str(self.key_path),
                "HOOKSPAWN_GITHUB_API_URL": self.github.url,
                "HOOKSPAWN_DATA_DIR": str(self.root / "data"),
                **self.extra_env,
            }
        )

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> Proc:
        logs = self.root / "logs"
        logs.mkdir(exist_ok=True)
        proc = launch(name, argv, env=env, log=logs / f"{name}-{len(self.procs)}.log")
        self.procs.append(proc)
        return proc

    def stop(self, proc: Proc) -> None:
        proc.stop()
        if proc in self.procs:
            self.procs.remove(proc)

    # hookspawn ----------------------------------------------------------------------------
    def start_worker(self, concurrency: int = 2, pool: str = "prefork") -> Proc:
        argv = [*HOOKSPAWN, "worker", "--concurrency", str(concurrency)]
        proc = self.spawn("worker", [*argv, "--pool", pool], self.env())
        wait_ready(proc, STARTUP_TIMEOUT)
        return proc

    def start_noop_worker(self, concurrency: int = 2) -> Proc:
        argv = [sys.executable, str(Path(__file__).resolve()), "noop-worker"]
        proc = self.spawn("noop", [*argv, "--concurrency", str(concurrency)], self.env(NOOP_DB))
        wait_ready(proc, STARTUP_TIMEOUT)
        return proc

    def start_web(self, workers: int = 1) -> tuple[Proc, int]:
        """`hookspawn web` (`workers` > 1: `--workers N`, N processes on the port)."""
        port = free_port()
        argv = [
            *HOOKSPAWN,
            "web",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--broker-port",
            str(free_port()),
        ]
        argv += ["--workers", str(workers)] if workers > 1 else []
        proc = self.spawn("web", argv, self.env())
        wait_answering(proc, f"http://127.0.0.1:{port}", STARTUP_TIMEOUT)
        return proc, port

    def seed_connections(self) -> None:
        """Install the App on Codertocat (Hello-World and Space), as the lifecycle webhook does."""
        body = payload("installation/created.payload.json")
        body["installation"]["id"] = INSTALLATION
        body["installation"]["account"]["login"] = ACCOUNT
        body["installation"]["repository_selection"] = "selected"
        body["repositories"] = [
            {"id": REPO_ID, "name": "Hello-World", "full_name": REPO, "private": False},
            {"id": OTHER_REPO_ID, "name": "Space", "full_name": OTHER_REPO, "private": False},
        ]
        client = self.client()
        try:
            ConnectionStore(client).apply_event("installation", body)
            assert ConnectionStore(client).covering(REPO), "seeded connection does not cover"
        finally:
            client.close()

    def spawn_id(self, delivery_id: str) -> str:
        return trigger_spawn_id(delivery_id, FIRING_AGENT, self.trigger_key)


# --------------------------------------------------------------------------- drains


def task_messages(task: str) -> TaskMessages:
    return TaskMessages(
        task=task, queue=QUEUE, origin="bench@127.0.0.1", reply_to=str(uuid.uuid4())
    )


def stage_deliveries(client: redis.Redis, bodies: Sequence[Body], n: int, prefix: str) -> list[str]:
    """Record `n` deliveries and stage their task messages, in pipelined `DeliveryStore.record`
    calls (the intake's script, with the staging list as its queue)."""
    messages = task_messages(PROCESS_DELIVERY)
    ids = [f"{prefix}-{i:06d}" for i in range(n)]
    for start in range(0, n, 500):
        pipe = client.pipeline(transaction=False)
        store = DeliveryStore(pipe, retention=timedelta(days=3), lease=30.0)
        for i in range(start, min(n, start + 500)):
            body = bodies[i % len(bodies)]
            new = NewDelivery(
                delivery_id=ids[i],
                event=body.event,
                action=body.action,
                repository=REPO,
                installation_id=1,
                hook_id="42",
                body=body.raw,
            )
            store.record(new, queue=STAGING, message=messages(ids[i]))
        pipe.execute()
    return ids


def stage_noop(client: redis.Redis, n: int) -> None:
    """`n` prebuilt no-op task messages on the staging list (what `send_task` would push)."""
    messages = task_messages(NOOP_TASK)
    for start in range(0, n, 1000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(n, start + 1000)):
            pipe.lpush(STAGING, messages(f"noop-{i}"))
        pipe.execute()


def release_and_time(
    client: redis.Redis, drained: Callable[[redis.Redis], bool], timeout: float
) -> tuple[float, int]:
    """RENAME the staged list onto the Celery queue (one atomic step: every message is there
    at once, and it wakes the worker's BRPOP); (seconds until `drained`, polls made)."""
    start = time.perf_counter()
    client.rename(STAGING, QUEUE)
    deadline = start + timeout
    polls = 1
    while not drained(client):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not drained within {timeout:g} s")
        time.sleep(0.01)  # ±10 ms on a drain of seconds; a busier poll would load the box
        polls += 1
    return time.perf_counter() - start, polls


def hookspawn_drained(sessions: int) -> Callable[[redis.Redis], bool]:
    def drained(client: redis.Redis) -> bool:
        pipe = client.pipeline(transaction=False)
        pipe.zcard(keys.PENDING)
        pipe.zcard(keys.SESSIONS)
        pending, made = pipe.execute()
        return bool(pending == 0 and made >= sessions)

    return drained


def noop_drained(client: redis.Redis) -> bool:
    pipe = client.pipeline(transaction=False)
    pipe.llen(QUEUE)
    pipe.hlen(UNACKED)
    queued, unacked = pipe.execute()
    return bool(queued == 0 and unacked == 0)


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of one process so far (0 when it is gone)."""
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of one process so far ((0, 0) when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK


class Probe:
    """CPU seconds of the worker's main and pool processes and of redis-server, and the
    server's Redis commands by name, between `start()` and `stop()`."""

    def __init__(self, client: redis.Redis, worker: Proc, redis_pid: int) -> None:
        self.client = client
        self.pids = {
            "main": [worker.pid],
            "pool": worker.worker_children(),
            "redis": [redis_pid],
        }
        self.cpu: dict[str, float] = {}
        self.system: dict[str, float] = {}
        self.commands: dict[str, int] = {}
        self.aof_rewrites = 0  # AOF rewrites that started or ran during the measurement

    def _sample(self) -> tuple[dict[str, float], dict[str, int]]:
        cpu: dict[str, float] = {}
        for name, pids in self.pids.items():
            splits = [cpu_split(p) for p in pids]
            cpu[name] = sum(u + s for u, s in splits)
            cpu[name + "/sys"] = sum(s for _, s in splits)
        stats = cast(dict[str, dict[str, Any]], self.client.info("commandstats"))
        calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
        return cpu, calls

    def _rewrites(self) -> tuple[int, bool]:
        info = self.client.info("persistence")
        return int(info.get("aof_rewrites", 0)), bool(info.get("aof_rewrite_in_progress"))

    def start(self) -> None:
        self._cpu0, self._calls0 = self._sample()
        self._rewrites0 = self._rewrites()

    def stop(self, exclude: dict[str, int]) -> None:
        """`exclude`: commands this process issued meanwhile (the polls)."""
        cpu, calls = self._sample()
        spent = {k: cpu[k] - self._cpu0.get(k, 0.0) for k in cpu}
        self.cpu = {k: v for k, v in spent.items() if not k.endswith("/sys")}
        self.system = {k.removesuffix("/sys"): v for k, v in spent.items() if k.endswith("/sys")}
        diff = {k: v - self._calls0.get(k, 0) - exclude.get(k, 0) for k, v in calls.items()}
        self.commands = {k: v for k, v in diff.items() if v > 0 and k != "info"}

    def per_item(self, n: int) -> str:
        total = sum(self.commands.values())
        top = sorted(self.commands.items(), key=lambda kv: -kv[1])[:16]
        cpu = ", ".join(
            f"{k} {v / n * 1e3:.2f} (sys {self.system.get(k, 0.0) / n * 1e3:.2f})"
            for k, v in self.cpu.items()
        )
        cmds = " ".join(f"{k} {v / n:.1f}" for k, v in top)
        return (
            f"CPU ms/item: {cpu}; AOF rewrites {self.aof_rewrites}; "
            f"Redis commands/item {total / n:.1f} ({cmds})"
        )


def noop_drain(bench: Bench, n: int, *, worker: Proc | None = None) -> tuple[float, Probe | None]:
    """Celery's own drain of `n` no-op tasks (tasks/s) by a running warm no-op worker:
    the same broker config (`celery_config`), prefork; with `worker`, CPU and commands too."""
    client = bench.client(NOOP_DB)
    try:
        client.delete(STAGING, QUEUE)
        stage_noop(client, n)
        probe = _probe(bench, client, worker)
        seconds, polls = release_and_time(client, noop_drained, timeout=max(60.0, n / 50))
        if probe is not None:
            probe.stop({"llen": polls, "hlen": polls, "rename": 1})
        return n / seconds, probe
    finally:
        client.close()


def _probe(bench: Bench, client: redis.Redis, worker: Proc | None) -> Probe | None:
    if worker is None or bench.redis.process is None:
        return None
    probe = Probe(client, worker, bench.redis.process.pid)
    probe.start()
    return probe


def hookspawn_drain(
    bench: Bench, n: int, bodies: Sequence[Body], prefix: str, *, worker: Proc | None = None
) -> DrainRun:
    """N recorded deliveries through the running warm worker: rate and exactly-once audit."""
    client = bench.client()
    try:
        client.delete(STAGING)
        if client.llen(QUEUE):
            raise RuntimeError("the queue is not empty before a timed drain")
        before = int(client.zcard(keys.SESSIONS))
        ids = stage_deliveries(client, bodies, n, prefix)
        fires = sum(1 for i in range(n) if bodies[i % len(bodies)].fires)
        drained = hookspawn_drained(before + fires)
        probe = _probe(bench, client, worker)
        seconds, polls = release_and_time(client, drained, timeout=max(120.0, n / 20))
        if probe is not None:
            probe.stop({"zcard": 2 * polls, "rename": 1})
        firing = {d for i, d in enumerate(ids) if bodies[i % len(bodies)].fires}
        report = audit(client, bench, {d: "pull_request" for d in ids}, firing)
        return DrainRun(n=n, seconds=seconds, audit=report, probe=probe)
    finally:
        client.close()


@dataclass
class DrainRun:
    n: int
    seconds: float
    audit: Audit
    probe: Probe | None = None

    @property
    def rate(self) -> float:
        return self.n / self.seconds


# --------------------------------------------------------------------------- audit


@dataclass
class Audit:
    """What became of every accepted delivery and every session it should have made."""

    accepted: int = 0
    processed: int = 0
    lost: list[str] = field(default_factory=list)  # accepted, never processed
    expected_sessions: int = 0
    sessions: int = 0
    missing: list[str] = field(default_factory=list)  # spawn ids with no session
    duplicated: int = 0  # sessions created more than once for one spawn id
    reprocessed: int = 0  # deliveries with more than one run (allowed, must not duplicate)
    wrong: list[str] = field(default_factory=list)  # firing delivery without one dispatched
    latencies: list[float] = field(default_factory=list)  # session createdAt - receivedAt, s

    @property
    def ok(self) -> bool:
        return not (self.lost or self.missing or self.duplicated or self.wrong)

    def line(self) -> str:
        return (
            f"accepted {self.accepted}, processed {self.processed}, lost {len(self.lost)}, "
            f"sessions {self.sessions}/{self.expected_sessions}, missing {len(self.missing)}, "
            f"duplicated {self.duplicated}, reprocessed {self.reprocessed}, "
            f"wrong outcomes {len(self.wrong)}"
        )


def audit(client: redis.Redis, bench: Bench, accepted: dict[str, str], firing: set[str]) -> Audit:
    """Read back every accepted delivery (status, runs) and the session of each firing one."""
    report = Audit(accepted=len(accepted), expected_sessions=len(firing))
    ids = list(accepted)
    created: dict[str, int] = {}
    for start in range(0, len(ids), 1000):
        chunk = ids[start : start + 1000]
        pipe = client.pipeline(transaction=False)
        for d in chunk:
            pipe.hgetall(keys.delivery(d))
            pipe.hgetall(keys.session(bench.spawn_id(d)))
        answers = pipe.execute()
        for i, d in enumerate(chunk):
            record, session = answers[2 * i : 2 * i + 2]
            status, received = record.get(b"status"), record.get(b"receivedAt")
            runs = [v for k, v in record.items() if k.startswith(b"run:")]
            if status != b"processed":
                report.lost.append(d)
                continue
            report.processed += 1
            if len(runs) > 1:
                report.reprocessed += 1
            dispatched = 0
            for raw in runs:
                for outcome in json.loads(raw)["outcomes"]:
                    if outcome["outcome"] == "dispatched" and outcome["agent"] == FIRING_AGENT:
                        dispatched += 1
                        if outcome["message"].endswith(" created"):
                            created[d] = created.get(d, 0) + 1
            if d not in firing:
                if dispatched:
                    report.wrong.append(d)
                continue
            if dispatched < 1:
                report.wrong.append(d)
            if not session:
                report.missing.append(d)
                continue
            report.sessions += 1
            created_at = parse_session(bench.spawn_id(d), session).created_at
            report.latencies.append(created_at.timestamp() - float(received))
    report.duplicated = sum(n - 1 for n in created.values() if n > 1)
    return report


def percentiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(p50, p99, max) in the values' unit; zeros when empty."""
    if not values:
        return 0.0, 0.0, 0.0
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return statistics.median(ordered), p99, ordered[-1]


# --------------------------------------------------------------------------- sender


@dataclass(frozen=True)
class Answer:
    delivery: str
    status: int  # 0: no answer (connection error)
    lag: float  # how late the request left, against its schedule (s)
    took: float  # request sent → answer read (s)


@dataclass
class SendReport:
    rate: float
    seconds: float
    answers: list[Answer]
    elapsed: float  # from the first request's schedule to the last one's departure
    fires: set[str]
    connections: int

    def accepted(self) -> dict[str, str]:
        return {a.delivery: "" for a in self.answers if a.status == 202}

    @property
    def achieved(self) -> float:
        return len(self.answers) / self.elapsed if self.elapsed else 0.0

    def summary(self) -> str:
        statuses: dict[int, int] = {}
        for a in self.answers:
            statuses[a.status] = statuses.get(a.status, 0) + 1
        lag = percentiles([a.lag for a in self.answers])
        took = percentiles([a.took for a in self.answers])
        return (
            f"sent {len(self.answers)} in {self.elapsed:.1f} s ({self.achieved:.0f}/s of "
            f"{self.rate:g}/s, {self.connections} connections), answers "
            f"{dict(sorted(statuses.items()))}; HTTP answer p50 "
            f"{took[0] * 1e3:.1f} ms p99 {took[1] * 1e3:.1f} ms; send lag p99 "
            f"{lag[1] * 1e3:.1f} ms max {lag[2] * 1e3:.1f} ms"
        )


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.used = time.perf_counter()

    async def post(self, request: bytes) -> int:
        self.writer.write(request)
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length:
            await self.reader.readexactly(length)
        return status

    def close(self) -> None:
        self.writer.close()


#: uvicorn closes a keep-alive connection idle for 5 s; never reuse one that close to it
KEEP_ALIVE = 3.0


def _take_idle(idle: list[_Conn], now: float) -> _Conn | None:
    while idle:
        conn = idle.pop()
        if now - conn.used < KEEP_ALIVE:
            return conn
        conn.close()
    return None


def _request(port: int, body: Body, delivery: str) -> bytes:
    head = (
        f"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body.raw)}\r\n"
        f"X-GitHub-Event: {body.event}\r\nX-GitHub-Delivery: {delivery}\r\n"
        f"X-GitHub-Hook-ID: 42\r\nX-Hub-Signature-256: {body.signature}\r\n"
        f"User-Agent: GitHub-Hookshot/bench\r\n\r\n"
    )
    return head.encode() + body.raw


async def _send_at_rate(
    port: int, bodies: Sequence[Body], rate: float, seconds: float, prefix: str, max_conns: int
) -> SendReport:
    """Open loop: request i leaves at start + i/rate whatever the earlier answers; keep-alive
    connections are reused when idle and opened when none is (at most `max_conns`)."""
    loop = asyncio.get_running_loop()
    idle: list[_Conn] = []
    opened = 0
    slots = asyncio.Semaphore(max_conns)
    answers: list[Answer] = []
    fires: set[str] = set()
    tasks: set[asyncio.Task[None]] = set()
    total = int(rate * seconds)

    async def one(i: int, due: float) -> None:
        nonlocal opened
        body = bodies[i % len(bodies)]
        delivery = f"{prefix}-{i:07d}"
        if body.fires:
            fires.add(delivery)
        async with slots:
            sent = time.perf_counter()
            status = 0
            for attempt in range(2):  # a reused connection the server closed: again, fresh
                conn = _take_idle(idle, sent) if attempt == 0 else None
                fresh = conn is None
                try:
                    if conn is None:
                        opened += 1
                        conn = _Conn(*await asyncio.open_connection("127.0.0.1", port))
                    request = _request(port, body, delivery)
                    status = await asyncio.wait_for(conn.post(request), 30)
                except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
                    if conn is not None:
                        conn.close()
                    if fresh:
                        break
                    continue
                conn.used = time.perf_counter()
                idle.append(conn)
                break
            answers.append(Answer(delivery, status, sent - due, time.perf_counter() - sent))

    # the schedule runs on perf_counter (uvloop's loop.time() has millisecond resolution)
    start = time.perf_counter() + 0.05
    for i in range(total):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = loop.create_task(one(i, due))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    sending = max(time.perf_counter() - start, 1e-9)  # until the last request was scheduled
    if tasks:
        await asyncio.wait(set(tasks), timeout=60)
    for conn in idle:
        conn.close()
    return SendReport(rate, seconds, answers, sending, fires, opened)


def send_at_rate(
    port: int,
    bodies: Sequence[Body],
    rate: float,
    seconds: float,
    prefix: str,
    max_conns: int = 256,
) -> SendReport:
    """Signed webhooks at `rate`/s for `seconds` to the web on 127.0.0.1:`port`."""
    coroutine = _send_at_rate(port, bodies, rate, seconds, prefix, max_conns)
    try:
        import uvloop

        return uvloop.run(coroutine)
    except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
        return asyncio.run(coroutine)


def wait_settled(client: redis.Redis, ids: Sequence[str], timeout: float) -> float:
    """Wait (bounded) until none of `ids` is pending; seconds waited."""
    start = time.monotonic()
    check = list(ids)
    while check and time.monotonic() - start < timeout:
        pipe = client.pipeline(transaction=False)
        for d in check:
            pipe.zscore(keys.PENDING, d)
        check = [d for d, score in zip(check, pipe.execute(), strict=True) if score is not None]
        if check:
            time.sleep(0.2)
    return time.monotonic() - start


# --------------------------------------------------------------------------- memory


class RssSampler:
    """Samples the summed VmRSS of process trees (every `interval` s) and keeps the peaks."""

    def __init__(self, roots: dict[str, int], interval: float = 0.25) -> None:
        self.roots = roots
        self.interval = interval
        self.peak_kb: dict[str, int] = dict.fromkeys(roots, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)
        self._trees: dict[str, list[int]] = {}

    def _run(self) -> None:
        ticks = 0
        while not self._stop.is_set():
            if ticks % 8 == 0:  # a worker's pool children can change: re-read the trees
                self._trees = {name: process_tree(pid) for name, pid in self.roots.items()}
            for name, pids in self._trees.items():
                total = sum(status_kb(pid, "VmRSS") for pid in pids)
                self.peak_kb[name] = max(self.peak_kb[name], total)
            ticks += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def hwm(self) -> dict[str, list[int]]:
        """VmHWM (kB, lifetime peak) of each process of each tree, right now."""
        return {
            name: [status_kb(pid, "VmHWM") for pid in process_tree(root)]
            for name, root in self.roots.items()
        }


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def wait_for_quiet(limit: float = 1.5, tries: int = 6, pause: float = 20.0) -> str:
    """Wait (at most `tries` x `pause` s) for the 1-min load average to drop below `limit`."""
    for _ in range(tries):
        if os.getloadavg()[0] < limit:
            break
        print(f"  load average {load_average()} >= {limit}; waiting {pause:g} s", flush=True)
        time.sleep(pause)
    return load_average()


# --------------------------------------------------------------------------- no-op worker


def noop_worker(concurrency: int) -> int:
    """A Celery worker on `celery_config` with one no-op task, run like `hookspawn worker`."""
    import logging

    from celery import Celery

    url = os.environ["HOOKSPAWN_REDIS_URL"]
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # as `hookspawn worker` does: no INFO line per task received and succeeded
    for name in ("celery.app.trace", "celery.worker.strategy"):
        logging.getLogger(name).setLevel(logging.WARNING)
    app = Celery("bench-noop", set_as_current=False)
    app.conf.update(celery_config(url))

    @app.task(name=NOOP_TASK, shared=False)  # type: ignore[untyped-decorator]
    def noop(*args: object) -> None:
        return None

    worker = app.Worker(
        concurrency=concurrency, pool="prefork", loglevel="INFO", without_heartbeat=True
    )
    worker.start()
    return int(cast(Any, worker).exitcode or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    noop = sub.add_parser("noop-worker", help="a Celery no-op worker on HOOKSPAWN_REDIS_URL")
    noop.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    if args.command == "noop-worker":
        raise SystemExit(noop_worker(args.concurrency))


if __name__ == "__main__":
    main()
