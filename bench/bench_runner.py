"""The local runner: webhook → `running` for a PR-head checkout, and sessions per minute.

Everything real, on this machine: an embedded redis-server, `hookspawn web`, `hookspawn worker
--concurrency 2` and `hookspawn runner` (its default concurrency) as subprocesses with
HOOKSPAWN_RUNNER=local; `acme/widgets` is a local bare repository (a few hundred files, one
pull request head per delivery at refs/pull/N/head) served through HOOKSPAWN_GIT_URL_REWRITE
(`file://`). The agent checks out `refs/pull/{{number}}/head` (depth 1, auth none) and has one
setup entry (`test -f README.md`); its harness skipped (no model key), so a session ends once set
up.

1. Latency: `--latency N` signed pull_request.opened deliveries posted one at a time, each
   after the previous session ended (an idle runner). Latency = the run record's `runningAt`
   - the delivery's `receivedAt` (both read back from Redis): intake, the delivery worker's
   spawn, the runner queue, staging (init, fetch, checkout, reset, clean) and setup.
2. Throughput: `--burst M` deliveries posted at once; sessions per minute = M / (last session's
   `succeededAt` - first delivery's `receivedAt`) * 60, at the runner's default concurrency.

Run:  .venv/bin/python bench/bench_runner.py [--latency 40] [--burst 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hookspawn.serve.redis_server import RedisServer, free_port  # noqa: E402
from tests import loopback  # noqa: E402
from tests.conftest import webhook_headers  # noqa: E402
from workers import keys  # noqa: E402

HOOKSPAWN = Path(sys.executable).parent / "hookspawn"
SECRET = "bench-secret"
PAYLOAD = ROOT / "tests" / "webhooks" / "pull_request" / "opened.payload.json"
AGENT = """\
name: pr-review
harness: claude-code
environment:
  name: runtime
  image: {kind: preset, name: node24}
  setup:
    - name: check
      commands: ["test -f README.md"]
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: refs/pull/{{payload.github.pullRequest.number}}/head
    auth: {kind: none}
triggers:
  - kind: github
    name: review
    event: pull_request
    actions: [opened]
"""


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_origin(base: Path, pulls: int) -> Path:
    """acme/widgets with 300 small files on main and one commit per pull request head."""
    work = base / "work"
    (work / "src").mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    (work / "README.md").write_text("widgets\n")
    for i in range(300):
        (work / "src" / f"w{i}.py").write_text(f"VALUE = {i}\n" * 20)
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "base")
    bare = base / "git" / "acme" / "widgets.git"
    bare.parent.mkdir(parents=True)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    git(work, "push", "-q", str(bare), "main")
    for number in range(1, pulls + 1):
        git(work, "checkout", "-q", "-B", f"pr{number}", "main")
        (work / f"pr{number}.txt").write_text(f"{number}\n")
        git(work, "add", ".")
        git(work, "commit", "-q", "-m", f"pull {number}")
        git(work, "push", "-q", str(bare), f"pr{number}:refs/pull/{number}/head")
    return base / "git"


def epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Runner:
    def __init__(self, base: Path, redis_url: str, git_root: Path) -> None:
        (base / ".auto" / "agents").mkdir(parents=True)
        (base / ".auto" / "agents" / "pr-review.yaml").write_text(AGENT)
        # setup runs confined by srt, as a runner's sessions do
        sandbox = base / "sandbox.json"
        sandbox.write_text('{"sandbox": {"backend": "srt", "mounts": [], "env": {}}}')
        self.port = free_port()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")},
            "HOOKSPAWN_REDIS_URL": redis_url,
            "HOOKSPAWN_DATA_DIR": str(base / "data"),
            "HOOKSPAWN_AGENTS_DIR": str(base / ".auto"),
            "HOOKSPAWN_WEBHOOK_SECRET": SECRET,
            "HOOKSPAWN_RUNNER": "local",
            # no model key: the harness is skipped, a session ends once set up
            "HOOKSPAWN_HARNESS_WITHOUT_KEY": "skip",
            "HOOKSPAWN_SANDBOX_CONFIG": str(sandbox),
            "HOOKSPAWN_GIT_URL_REWRITE": f"https://github.com/=file://{git_root}/",
            "HOOKSPAWN_LOG_LEVEL": "WARNING",
        }
        self.procs = [
            self._start(base, "web", "web", "--port", str(self.port)),
            self._start(base, "worker", "worker", "--concurrency", "2"),
            self._start(base, "runner", "runner"),
        ]
        self.http = loopback.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.http.get("/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("hookspawn web did not come up")
            time.sleep(0.1)

    def _start(self, base: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (base / f"{name}.log").open("wb")
        return subprocess.Popen(
            [str(HOOKSPAWN), *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            process_group=0,
        )

    def send(self, number: int) -> str:
        payload: dict[str, Any] = json.loads(PAYLOAD.read_text())
        payload["number"] = number
        payload["pull_request"]["number"] = number
        payload["repository"]["full_name"] = "acme/widgets"
        raw = json.dumps(payload).encode()
        delivery = f"bench-{uuid.uuid4().hex[:16]}"
        answer = self.http.post(
            "/webhooks/github",
            content=raw,
            headers=webhook_headers(raw, "pull_request", delivery, secret=SECRET),
        )
        assert answer.status_code == 202, answer.text
        return delivery

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def session_of(client: redis.Redis, delivery: str) -> str | None:
    record = keys.delivery(delivery)
    last = client.hget(record, f"run:{int(client.hget(record, 'runs') or 0)}")
    if not last:
        return None
    outcomes = json.loads(last).get("outcomes") or []
    return outcomes[0].get("sessionId") if outcomes else None


def wait_ended(
    client: redis.Redis, deliveries: list[str], timeout: float
) -> dict[str, dict[str, str]]:
    """delivery → its session's run record, once every session has ended."""
    deadline = time.monotonic() + timeout
    done: dict[str, dict[str, str]] = {}
    while len(done) < len(deliveries):
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(done)} of {len(deliveries)} sessions ended")
        for delivery in deliveries:
            if delivery in done:
                continue
            session = session_of(client, delivery)
            run = client.hgetall(keys.session_run(session)) if session else {}
            record = {k.decode(): v.decode() for k, v in run.items()}
            if record.get("status") in ("succeeded", "failed", "cancelled"):
                if record["status"] != "succeeded":
                    raise SystemExit(f"session {session}: {record}")
                done[delivery] = record
        time.sleep(0.02)
    return done


def received(client: redis.Redis, delivery: str) -> float:
    return float(client.hget(keys.delivery(delivery), "receivedAt").decode())  # epoch seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=int, default=40)
    parser.add_argument("--burst", type=int, default=60)
    parser.add_argument("--verbose", action="store_true", help="each session's status times")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="hookspawn-bench-runner-"))
    base.chmod(0o755)
    server = RedisServer(base / "redis").start()
    runner = None
    try:
        git_root = make_origin(base, max(args.latency, args.burst))
        client = redis.Redis.from_url(server.url)
        runner = Runner(base, server.url, git_root)
        latencies = []
        for number in range(1, args.latency + 1):
            delivery = runner.send(number)
            record = wait_ended(client, [delivery], 60)[delivery]
            latencies.append(epoch(record["runningAt"]) - received(client, delivery))
            if args.verbose:
                t0 = received(client, delivery)
                print({k: round(epoch(v) - t0, 3) for k, v in record.items() if k.endswith("At")})
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        print(
            f"webhook -> running, PR-head checkout ({args.latency} sessions, one at a time): "
            f"p50 {cuts[49] * 1000:.0f} ms, p99 {cuts[98] * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms"
        )
        deliveries = [runner.send(number) for number in range(1, args.burst + 1)]
        records = wait_ended(client, deliveries, 600)
        first = min(received(client, d) for d in deliveries)
        last = max(epoch(r["succeededAt"]) for r in records.values())
        print(
            f"throughput, a burst of {args.burst} at the runner's default concurrency (2): "
            f"{args.burst / (last - first) * 60:.0f} sessions/minute "
            f"({last - first:.1f} s)"
        )
    finally:
        if runner:
            runner.stop()
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
