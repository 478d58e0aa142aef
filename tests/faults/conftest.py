"""The fault harness: a `Cluster` of real processes (redis-server, `hookspawn web`,
`hookspawn worker`) with the GitHub stand-in and an HTTP dispatch target in-process.

Every scenario builds one Cluster, breaks something, and ends with the same three
checks: every delivery answered 202 settled, each expected spawn id got exactly one
created session at the target (and nothing else did), and no secret leaked into Redis,
the process logs or the dispatched specs.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import itertools
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis

from hookspawn.serve.redis_server import RedisServer, free_port
from tests import loopback
from tests.conftest import WEBHOOKS, wait_for, webhook_headers
from tests.dispatch_target import DispatchTarget
from tests.github_standin import ROUTES, GitHubStandin, _Answer
from tests.procs import (
    HOOKSPAWN,
    Proc,
    children_of,
    environment,
    group_members,
    launch,
    wait_answering,
    wait_ready,
)
from tests.secret_scan import redis_haystacks
from tests.workers.delivery.pipeline.conftest import (
    ACCOUNT,
    INSTALLATION,
    OTHER_REPO,
    OTHER_REPO_ID,
    REPO,
    REPO_ID,
    example,
    write_agents,
)
from triggers.spawn_rules import trigger_spawn_id
from workers import keys

#: the rotation list given to web and worker; deliveries are signed with the first
SECRETS = ("fault-webhook-secret-current-5e1d9a", "fault-webhook-secret-previous-77c0f3")

#: two agents fire on every pull_request opened, each minting its own scoped token
AGENTS = {
    "fragments/environments/runtime.yaml": """
        harness: claude-code
        environment:
          name: runtime
          image: {kind: preset, name: node24}
    """,
    "agents/reviewer.yaml": """
        name: reviewer
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: refs/pull/{{payload.github.pullRequest.number}}/head
            auth:
              kind: githubApp
              capabilities: {contents: read, pullRequests: write}
        triggers:
          - event: pull_request
            actions: [opened, synchronize]
            name: review
            displayTitle: "Review #{{ github.pullRequest.number }}: {{ github.pullRequest.title }}"
            initialPrompt: "Review {{ github.pullRequest.htmlUrl }}"
    """,
    "agents/builder.yaml": """
        name: builder
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: refs/heads/{{payload.github.pullRequest.head.ref}}
            auth:
              kind: githubApp
              capabilities: {contents: write, checks: write}
        triggers:
          - event: pull_request
            actions: [opened, synchronize]
            name: build
            message: "Build {{ github.pullRequest.head.sha }}"
    """,
}


def web_client(url: str) -> httpx.Client:
    """A client that never reuses a keep-alive connection uvicorn (5s idle) may be closing."""
    return loopback.Client(base_url=url, timeout=30, limits=httpx.Limits(keepalive_expiry=2.0))


#: how long anything may take on a busy 2-core machine before a wait fails
STARTUP_TIMEOUT = 60.0
SETTLE_TIMEOUT = 120.0


# -- the GitHub stand-in, with arrival times -------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One request the stand-in answered: when it arrived (wall clock) and what it got."""

    at: float
    took: float
    route: str | None
    body: Any
    status: int
    headers: dict[str, str]

    @property
    def permissions(self) -> str:
        """The asked permissions as a stable string (identifies the agent of a mint)."""
        wanted = self.body.get("permissions") if isinstance(self.body, dict) else None
        return json.dumps(wanted, sort_keys=True)


def route_of(method: str, target: str) -> str | None:
    path = target.split("?", 1)[0].rstrip("/") or "/"
    for name, (route_method, pattern) in ROUTES.items():
        if route_method == method and pattern.match(path):
            return name
    return None


class FaultStandin(GitHubStandin):
    """The GitHub stand-in, recording when each request arrived and how it was answered."""

    def __init__(self) -> None:
        # a token within the cache's refresh margin is never reused: every spawn mints
        super().__init__(token_ttl=300.0)
        self.seen: list[Seen] = []

    def _handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Answer:
        at = time.time()
        answer = super()._handle(method, target, headers, raw)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.seen.append(
                Seen(
                    at,
                    time.time() - at,
                    route_of(method, target),
                    body,
                    answer.status,
                    dict(answer.headers),
                )
            )
        return answer

    def issued_tokens(self) -> list[str]:
        """Every installation token it ever minted (answered or not)."""
        with self._lock:
            return list(self._tokens)

    def credentials(self) -> set[str]:
        """Every credential presented to it: App JWTs and installation tokens."""
        with self._lock:
            headers = [r.headers.get("authorization", "") for r in self.requests]
        return {h.partition(" ")[2] for h in headers if h.partition(" ")[2]}

    def mints(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.route == "access_tokens"]


# -- the dispatch target, with what is in flight ---------------------------------------------


@dataclass(frozen=True)
class TargetAnswer:
    key: str | None
    status: int
    body: dict[str, Any]
    started: float
    finished: float


class TargetWatch:
    """Wraps a DispatchTarget: which POSTs are in flight now, and what each one was answered."""

    def __init__(self, target: DispatchTarget) -> None:
        self.target = target
        self._inner = target.answer
        target.answer = self.answer  # type: ignore[method-assign]
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._inflight: dict[int, tuple[float, dict[str, Any]]] = {}
        self.answers: list[TargetAnswer] = []

    def answer(self, key: str | None, body: dict[str, Any]) -> int:
        started = time.monotonic()
        with self._lock:
            n = next(self._ids)
            self._inflight[n] = (started, body)
        try:
            status = self._inner(key, body)
        finally:
            with self._lock:
                del self._inflight[n]
        with self._lock:
            self.answers.append(TargetAnswer(key, status, body, started, time.monotonic()))
        return status

    def inflight(self, since: float = 0.0) -> list[dict[str, Any]]:
        """The specs being POSTed right now (by requests that arrived after `since`)."""
        with self._lock:
            return [body for started, body in self._inflight.values() if started >= since]

    def wait_inflight(
        self, since: float = 0.0, timeout: float = STARTUP_TIMEOUT
    ) -> list[dict[str, Any]]:
        """Block until a session POST that arrived after `since` is being answered."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = self.inflight(since)
            return bool(found)

        wait_for(seen, timeout, 0.01, what="a dispatch in flight")
        return found

    def created(self) -> Counter[str]:
        """Idempotency-Key → how many times the target answered 201 (created) for it."""
        with self._lock:
            return Counter(a.key or "<none>" for a in self.answers if a.status == 201)

    def snapshot(self) -> list[TargetAnswer]:
        with self._lock:
            return list(self.answers)


# -- processes -------------------------------------------------------------------------------


# -- the cluster -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IntakeAnswer:
    delivery: str
    event: str
    status: int  # 0: no answer at all (connection refused or reset)
    sent: float
    answered: float


@dataclass
class Audit:
    """What became of every delivery answered 202 and every session the target created."""

    deliveries: int = 0
    expected_spawns: int = 0
    created_sessions: int = 0
    dispatch_posts: int = 0
    lost: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    wrong_outcomes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    #: sent, but no answer came back (client timeout): recorded or not, either is fine
    unanswered: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        named = {
            "lost (answered 202, not in the store)": self.lost,
            "not settled (not processed)": self.unsettled,
            "wrong outcome": self.wrong_outcomes,
            "spawn id never created at the target": self.missing,
            "session created for no expected spawn id": self.unexpected,
            "duplicated (more than one session)": self.duplicated,
        }
        return [f"{label}: {items}" for label, items in named.items() if items]

    def assert_clean(self) -> None:
        problems = self.problems()
        assert not problems, "exactly-once broken:\n  " + "\n  ".join(problems)


class Cluster:
    """One hookspawn deployment under test: redis-server, web, worker, stand-ins."""

    def __init__(
        self,
        root: Path,
        github: FaultStandin,
        target: DispatchTarget,
        *,
        lease: float = 3.0,
        max_retries: int = 8,
        appendfsync: str = "always",
        concurrency: int = 2,
    ) -> None:
        self.root = root
        self.github = github
        self.target = target
        self.watch = TargetWatch(target)
        self.lease = lease
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.redis = RedisServer(root / "redis", appendfsync=appendfsync)
        self.web_port = free_port()
        self.url = f"http://127.0.0.1:{self.web_port}"
        self.http = web_client(self.url)
        self.key_path = root / "app.pem"
        self.auto = root / ".auto"
        self.web: Proc | None = None
        self.worker: Proc | None = None
        self.procs: list[Proc] = []
        self.answers: list[IntakeAnswer] = []
        self.accepted: dict[str, str] = {}  # delivery id answered 202 → event
        self.sent: dict[str, str] = {}  # every delivery id sent → event
        self.spawn_keys: list[tuple[str, str]] = []  # (agent, trigger key) firing on a PR
        self._lock = threading.Lock()
        self._numbers = itertools.count(1000)

    # processes --------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        return environment(
            {
                "HOOKSPAWN_REDIS_URL": self.redis.url,
                "HOOKSPAWN_WEBHOOK_SECRET": ",".join(SECRETS),
                "HOOKSPAWN_AGENTS_DIR": str(self.auto),
                "HOOKSPAWN_GITHUB_APP_ID": self.github.app_id,
                "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH": str(self.key_path),
                "HOOKSPAWN_GITHUB_API_URL": self.github.url,
                "HOOKSPAWN_DISPATCH_URL": self.target.url,
                "HOOKSPAWN_DATA_DIR": str(self.root / "data"),
                "HOOKSPAWN_LEASE_SECONDS": str(self.lease),
                "HOOKSPAWN_MAX_RETRIES": str(self.max_retries),
            }
        )

    def _spawn(self, name: str, args: list[str]) -> Proc:
        logs = self.root / "logs"
        logs.mkdir(exist_ok=True)
        log = logs / f"{name}-{sum(1 for p in self.procs if p.name == name)}.log"
        proc = launch(name, [*HOOKSPAWN, name, *args], env=self.env(), log=log)
        self.procs.append(proc)
        return proc

    def start(self) -> Cluster:
        self.key_path.write_text(self.github.private_key_pem)
        write_agents(self.root, AGENTS)
        self.redis.start()
        self.start_web()
        self.start_worker()
        self.loaded()
        return self

    def loaded(self) -> None:
        """The web's agents loaded without errors, their two pull_request spawns noted; the
        test's connection made."""
        agents = self.http.get("/agents").json()
        assert not agents["errors"], agents["errors"]
        self.spawn_keys = sorted(
            (agent["name"], trigger["key"])
            for agent in agents["items"]
            for trigger in agent["triggers"]
            if trigger["event"] == "pull_request"
        )
        assert len(self.spawn_keys) == 2, agents
        self.connect()

    def start_web(self) -> Proc:
        proc = self._spawn(
            "web",
            [
                "--host",
                "127.0.0.1",
                "--port",
                str(self.web_port),
                "--broker-port",
                str(free_port()),
            ],
        )
        self.web = proc
        wait_answering(proc, self.url, STARTUP_TIMEOUT)
        return proc

    def start_worker(self, *, wait: bool = True) -> Proc:
        proc = self._spawn("worker", ["--concurrency", str(self.concurrency)])
        self.worker = proc
        if wait:
            self.wait_worker_ready(proc)
        return proc

    def wait_worker_ready(self, proc: Proc) -> None:
        wait_ready(proc, STARTUP_TIMEOUT)

    def kill_worker(self, how: str) -> list[int]:
        """SIGKILL the worker: `group` (main and pool children: the worker died), `main`
        (only the main process; its children are orphaned) or `children` (the pool
        processes only; the main process replaces them). Returns the pids killed."""
        proc = self.worker
        assert proc is not None and proc.alive(), "no worker to kill"
        if how == "children":
            victims = children_of(proc.pid)
            assert victims, "the worker has no pool processes"
            for pid in victims:
                os.kill(pid, signal.SIGKILL)
            return victims
        if how == "group":
            victims = group_members(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)
        elif how == "main":
            victims = [proc.pid]
            os.kill(proc.pid, signal.SIGKILL)
        else:
            raise ValueError(f"unknown way to kill a worker: {how!r}")
        proc.popen.wait(10)
        return victims

    def wait_group_gone(self, proc: Proc, timeout: float = 10.0) -> None:
        """Wait until no process of `proc`'s group is left (no orphaned pool process)."""
        wait_for(
            lambda: not group_members(proc.pid),
            timeout,
            what=f"every process of {proc.name} {proc.pid} exiting",
        )

    def term_worker(self, timeout: float = 60.0) -> int:
        """SIGTERM (Celery's warm shutdown) and wait for the worker to exit; its exit code."""
        proc = self.worker
        assert proc is not None and proc.alive(), "no worker to stop"
        proc.popen.send_signal(signal.SIGTERM)
        try:
            return proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            members = group_members(proc.pid)
            # Celery's own handler: the main process logs where each of its threads is
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(2)
            pytest.fail(
                f"the worker did not finish its warm shutdown in {timeout}s (processes left in "
                f"its group: {members}); its log:\n{proc.tail(6000)}"
            )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.alive():
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(15)
            # anything left in its group (an orphaned pool process) goes too
            for pid in group_members(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if proc.alive():
                proc.popen.kill()
                proc.popen.wait(10)
        self.http.close()
        self.redis.stop()

    # intake -----------------------------------------------------------------------------
    def send(
        self,
        event: str,
        body: dict[str, Any],
        *,
        delivery: str | None = None,
        client: httpx.Client | None = None,
    ) -> IntakeAnswer:
        delivery = delivery or f"f-{uuid.uuid4().hex[:20]}"
        raw = json.dumps(body).encode()
        headers = webhook_headers(
            raw, event, delivery, secret=SECRETS[0], **{"User-Agent": "GitHub-Hookshot/faults"}
        )
        sent = time.monotonic()
        try:
            status = (client or self.http).post("/webhooks/github", content=raw, headers=headers)
            code = status.status_code
        except httpx.HTTPError:
            code = 0
        answer = IntakeAnswer(delivery, event, code, sent, time.monotonic())
        with self._lock:
            self.answers.append(answer)
            self.sent[delivery] = event
            if code == 202:
                self.accepted[delivery] = event
        return answer

    def pr_body(self) -> dict[str, Any]:
        number = next(self._numbers)
        body = copy.deepcopy(example(WEBHOOKS, "pull_request/opened.payload.json"))
        body["number"] = number
        body["pull_request"]["number"] = number
        body["pull_request"]["title"] = f"fault drill #{number}"
        body["pull_request"]["head"]["ref"] = f"drill-{number}"
        return body

    def send_pr(self, client: httpx.Client | None = None) -> IntakeAnswer:
        return self.send("pull_request", self.pr_body(), client=client)

    def connect(self) -> None:
        """Install the App on Codertocat (Hello-World and Space), as the webhook does."""
        body = copy.deepcopy(example(WEBHOOKS, "installation/created.payload.json"))
        body["installation"]["id"] = INSTALLATION
        body["installation"]["account"]["login"] = ACCOUNT
        body["installation"]["repository_selection"] = "selected"
        body["repositories"] = [
            {"id": REPO_ID, "name": "Hello-World", "full_name": REPO, "private": False},
            {"id": OTHER_REPO_ID, "name": "Space", "full_name": OTHER_REPO, "private": False},
        ]
        answer = self.send("installation", body)
        assert answer.status == 202, answer
        self.settle([answer.delivery])

    def log_lines(self, name: str, needle: str) -> int:
        """How many lines of every `name` (web, worker) incarnation's log contain `needle`."""
        return sum(
            line.count(needle)
            for proc in self.procs
            if proc.name == name
            for line in proc.log_text().splitlines()
        )

    def stream(self, interval: float) -> Stream:
        return Stream(self, interval)

    # outcomes ---------------------------------------------------------------------------
    def expected_spawns(self, delivery: str) -> set[str]:
        if self.sent.get(delivery) != "pull_request":
            return set()
        return {trigger_spawn_id(delivery, agent, key) for agent, key in self.spawn_keys}

    def view(self, delivery: str) -> dict[str, Any] | None:
        response = self.http.get(f"/deliveries/{delivery}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        found: dict[str, Any] = response.json()
        return found

    def statuses(self) -> dict[str, str]:
        items = self.http.get("/deliveries", params={"limit": 1000}).json()["items"]
        return {item["deliveryId"]: item["status"] for item in items}

    def pending(self) -> set[str]:
        client = redis.Redis.from_url(self.redis.url)
        try:
            members = cast(list[bytes], client.zrange(keys.PENDING, 0, -1))
        finally:
            client.close()
        return {m.decode() for m in members}

    def queued(self) -> tuple[Counter[str], int]:
        """Delivery ids of the task messages waiting in the broker queue, and how many
        messages are delivered but unacknowledged (kombu's `unacked` hash)."""
        client = redis.Redis.from_url(self.redis.url)
        try:
            raw = cast(list[bytes], client.lrange("hookspawn", 0, -1))
            unacked = int(client.hlen("unacked"))
        finally:
            client.close()
        ids: Counter[str] = Counter()
        for message in raw:
            args = json.loads(base64.b64decode(json.loads(message)["body"]))[0]
            ids[str(args[0])] += 1
        return ids, unacked

    def settle(
        self, deliveries: list[str] | None = None, timeout: float = SETTLE_TIMEOUT, runs: int = 1
    ) -> dict[str, dict[str, Any]]:
        """Wait until every delivery (default: all answered 202) is processed or failed."""
        wanted = list(self.accepted) if deliveries is None else deliveries
        views: dict[str, dict[str, Any]] = {}
        left = list(wanted)
        statuses: dict[str, str] = {}
        pending: set[str] = set()

        def settled() -> bool:
            nonlocal left, statuses, pending
            statuses, pending = self.statuses(), self.pending()
            done = [
                d for d in left if statuses.get(d) in ("processed", "failed") and d not in pending
            ]
            for delivery in done:
                view = self.view(delivery)
                if view is not None and len(view["runs"]) >= runs:
                    views[delivery] = view
            left = [d for d in left if d not in views]
            return not left

        def unsettled() -> str:
            state = {d: statuses.get(d, "<not recorded>") for d in left[:20]}
            return (
                f"{len(left)} of {len(wanted)} deliveries not settled "
                f"(first ones left: {state}; pending in Redis: {len(pending)})"
            )

        wait_for(settled, timeout, 0.25, what=unsettled)
        return views

    def replay(self, delivery: str) -> None:
        response = self.http.post(f"/deliveries/{delivery}/replay")
        assert response.status_code == 202, response.text

    def replay_failed(self, views: dict[str, dict[str, Any]]) -> list[str]:
        """Replay every delivery that failed (with a reason) until it completes; the ids."""
        failed = [d for d, v in views.items() if not _completed(v, self.expected_spawns(d))]
        for delivery in failed:
            view = views[delivery]
            reasons = [view.get("error")] + [o.get("message") for o in view["outcomes"]]
            assert any(reasons), f"delivery {delivery} did not complete and gives no reason"
            self.replay(delivery)
        if failed:
            again = self.settle(failed, runs=2)
            views.update(again)
        return failed

    def audit(self, views: dict[str, dict[str, Any]] | None = None) -> Audit:
        """Check every 202 delivery against the store and the target's created sessions."""
        audit = Audit(deliveries=len(self.accepted))
        expected: dict[str, str] = {}
        for delivery in self.accepted:
            view = views.get(delivery) if views is not None else None
            view = view or self.view(delivery)
            spawns = self.expected_spawns(delivery)
            expected.update(dict.fromkeys(spawns, delivery))
            if view is None:
                audit.lost.append(delivery)
                continue
            if view["status"] != "processed":
                audit.unsettled.append(f"{delivery}={view['status']}")
                continue
            if not _completed(view, spawns):
                runs = [
                    (run.get("status"), run.get("error"), run.get("outcomes"))
                    for run in view["runs"]
                ]
                audit.wrong_outcomes.append(f"{delivery}: runs {runs}")
        with self._lock:
            audit.unanswered = [a.delivery for a in self.answers if a.status == 0]
        for delivery in audit.unanswered:
            # whether it was recorded or not, its spawns may exist, once
            expected.update(dict.fromkeys(self.expected_spawns(delivery), delivery))
        created = self.watch.created()
        answers = self.watch.snapshot()
        audit.expected_spawns = len(expected)
        audit.created_sessions = sum(created.values())
        audit.dispatch_posts = len(answers)
        audit.missing = sorted(
            spawn
            for spawn, delivery in expected.items()
            if spawn not in created and delivery not in audit.unanswered
        )
        audit.unexpected = sorted(set(created) - set(expected))
        audit.duplicated = sorted(f"{key} x{n}" for key, n in created.items() if n > 1)
        # a spawn id that were not deterministic would show up as a second session
        # of the same (delivery, agent), under another key
        per_spawn = Counter(
            (a.body.get("origin", {}).get("deliveryId"), a.body.get("agent"))
            for a in answers
            if a.status == 201
        )
        audit.duplicated += [f"{d}/{agent} x{n}" for (d, agent), n in per_spawn.items() if n > 1]
        mismatched = [a.key for a in answers if a.key != a.body.get("id")]
        audit.unexpected += [f"Idempotency-Key {k} differs from the spec id" for k in mismatched]
        return audit

    # secret hygiene ---------------------------------------------------------------------
    def secrets(self) -> dict[str, str]:
        """Every secret that must never be stored, logged or dispatched, by what it is."""
        found: dict[str, str] = {}
        for n, token in enumerate(self.github.issued_tokens()):
            found[f"installation token #{n}"] = token
        for n, credential in enumerate(sorted(self.github.credentials())):
            found.setdefault(f"credential sent to GitHub #{n}", credential)
        for n, secret in enumerate(SECRETS):
            found[f"webhook secret #{n}"] = secret
        key_lines = [
            line for line in self.github.private_key_pem.splitlines() if "-----" not in line
        ]
        found["App private key (a line of it)"] = key_lines[len(key_lines) // 2]
        return found

    def haystacks(self) -> Iterator[tuple[str, bytes]]:
        """Everything a secret could have leaked into, with where it came from."""
        client = redis.Redis.from_url(self.redis.url)
        try:
            yield from redis_haystacks(client)
        finally:
            client.close()
        for path in sorted(self.redis.data_dir.rglob("*")):
            if path.is_file():
                yield f"redis file {path.name}", path.read_bytes()
        for proc in self.procs:
            yield f"log {proc.log.name}", proc.log.read_bytes()
        for n, received in enumerate(self.target.received):
            yield f"dispatched spec #{n} ({received.key})", json.dumps(received.body).encode()

    def assert_no_secrets(self) -> dict[str, int]:
        """Scan every haystack for every secret; returns what was scanned (for the report)."""
        secrets = self.secrets()
        tokens = [k for k in secrets if k.startswith("installation token")]
        assert tokens, "no installation token was minted: the scan would prove nothing"
        handed = self.session_credentials()
        assert handed, "no session credential was dispatched: the scan would prove nothing"
        leaks: list[str] = []
        counts: Counter[str] = Counter()
        decoded_body = False
        for where, hay in self.haystacks():
            counts[where.split(" ", 1)[0]] += 1
            if b"fault drill #" in hay and where.startswith("redis hookspawn:delivery:"):
                decoded_body = True  # the packed bodies were really read
            leaks += [f"{label} in {where}" for label, s in secrets.items() if s.encode() in hay]
            # a session credential is handed over in its dispatched spec, and nowhere else
            if not where.startswith("dispatched spec"):
                leaks += [f"{label} in {where}" for label, s in handed.items() if s.encode() in hay]
        assert decoded_body, "no decompressed delivery body was scanned"
        assert not leaks, "secrets leaked:\n  " + "\n  ".join(sorted(set(leaks)))
        return {
            "secrets": len(secrets),
            "tokens": len(tokens),
            "credentials": len(handed),
            **counts,
        }

    def session_credentials(self) -> dict[str, str]:
        """The session credentials the dispatch target was handed."""
        found: dict[str, str] = {}
        for received in self.target.received:
            broker = received.body.get("broker") or {}
            if broker.get("credential"):
                found[f"session credential of {received.key}"] = str(broker["credential"])
        return found


def _completed(view: dict[str, Any], spawns: set[str]) -> bool:
    """Processed, and exactly one `dispatched` outcome per expected spawn id."""
    if view["status"] != "processed":
        return False
    outcomes = view["outcomes"]
    dispatched = [o.get("sessionId") for o in outcomes if o["outcome"] == "dispatched"]
    return len(outcomes) == len(spawns) and sorted(dispatched) == sorted(spawns)


class Stream:
    """Sends one pull_request delivery every `interval` seconds from a thread until stopped."""

    def __init__(self, cluster: Cluster, interval: float) -> None:
        self.cluster = cluster
        self.interval = interval
        self.answers: list[IntakeAnswer] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delivery-stream", daemon=True)

    def _run(self) -> None:
        with web_client(self.cluster.url) as client:
            while not self._stop.is_set():
                self.answers.append(self.cluster.send_pr(client))
                self._stop.wait(self.interval)

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def github() -> Iterator[FaultStandin]:
    standin = FaultStandin()
    standin.start()
    try:
        standin.add_installation(
            INSTALLATION, ACCOUNT, repositories={REPO_ID: REPO, OTHER_REPO_ID: OTHER_REPO}
        )
        yield standin
    finally:
        standin.stop()


@pytest.fixture
def make_cluster(
    tmp_path: Path, github: FaultStandin, target: DispatchTarget
) -> Iterator[Callable[..., Cluster]]:
    """`make_cluster(lease=…, max_retries=…)` starts a Cluster, stopped after the test."""
    made: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster = Cluster(tmp_path, github, target, **options)
        made.append(cluster)
        return cluster.start()

    yield make
    for cluster in made:
        cluster.stop()
