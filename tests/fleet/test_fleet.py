"""A fleet on one Redis, each process as on a host of its own: two `hookspawn web`, two
`hookspawn worker` and two `hookspawn runner`, each with its own data directory (and so its own
session roots), reaching one another only through Redis and the public addresses (a load
balancer in front of both webs' admin ports, HOOKSPAWN_PUBLIC_URL, and one in front of both
broker ports, HOOKSPAWN_BROKER_PUBLIC_URL), never through a file.

A burst of sessions spreads over both runners and each runs once; one runner killed (SIGKILL)
mid-session leaves its sessions `failed runner_lost` (the other runner's sweep) while the other
runner's succeed; a runner joining later takes new sessions."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from hookspawn.serve.redis_server import free_port
from tests import loopback
from tests.conftest import SECRET, wait_for, webhook_headers
from tests.fleet.balancer import Balancer
from tests.git_server import GitServer
from tests.github_standin import GitHubStandin
from tests.procs import HOOKSPAWN, Proc, environment, launch, wait_answering, wait_ready
from tests.suite_marks import marks_tests
from tests.workers.session.runner.conftest import Origin, sandbox_file, write_agent
from tests.workers.session.runner.test_lifecycle import (
    MOUNT_GITHUB_APP,
    PR_REVIEW_TRIGGER,
    widgets_payload,
)
from tests.workers.session.runner.test_mcp_config import MCP_CALL
from workers import keys
from workers.session.runner.logs import log_path

INSTALLATION = 7
WIDGETS_ID = 101

#: the sessions one runner runs at once (`hookspawn runner --concurrency`)
SLOTS = 1

#: how long any process may take to start, or a session to reach a state, on a busy machine
WAIT = 90.0

#: where a session's home is under its root on its runner's host
HOME = "home/user"

#: the sessions' harness, inside srt, standard library only: it notes that it ran (in its
#: session's home, `runs`), lists its tools at its MCP endpoint (the broker, through the
#: balancer), then waits until the test drops `release` in that home
HARNESS = (
    r"""
import json, os, time, urllib.request
root = os.environ["HOME"]  # /home/user, the session's home on its runner's host
with open(root + "/runs", "a") as runs:
    runs.write(os.environ["HOOKSPAWN_SESSION_ID"] + "\n")
"""
    + MCP_CALL
    + r"""
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "fleet", "version": "1"}})
listed = call(2, "tools/list", {})
with open(root + "/mcp-result.part", "w") as out:
    json.dump({"url": config["url"], "listed": listed}, out)
os.rename(root + "/mcp-result.part", root + "/mcp-result")
for _ in range(3000):
    if os.path.exists(root + "/release"):
        raise SystemExit(0)
    time.sleep(0.1)
raise SystemExit(3)
"""
)


@dataclass
class Host:
    """One process's own directory, as a host of its own would have: its data directory, its
    copy of the agents, the App key and the sandbox configuration."""

    name: str
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def agents(self) -> Path:
        return self.root / ".auto"


class Fleet:
    """The processes and what they reach: Redis, the GitHub stand-in, the git server, the two
    balancers (their backends are the webs' ports, fixed before the webs start)."""

    def __init__(
        self,
        shared_dir: Path,
        redis_url: str,
        github: GitHubStandin,
        git: GitServer,
        admin: Balancer,
        broker: Balancer,
    ) -> None:
        self.shared_dir, self.redis_url = shared_dir, redis_url
        self.github, self.git, self.admin, self.broker = github, git, admin, broker
        self.procs: list[Proc] = []
        self.runners: dict[str, Proc] = {}
        self.hosts: dict[str, Host] = {}
        self.http = loopback.Client(base_url=admin.url, timeout=30)

    def host(self, name: str) -> Host:
        host = Host(name, self.shared_dir / name)
        host.root.mkdir(mode=0o755)
        (host.root / "app.pem").write_text(self.github.private_key_pem)
        write_agent(
            host.agents,
            "pr-review",
            mounts=MOUNT_GITHUB_APP.format(
                ref="refs/pull/{{payload.github.pullRequest.number}}/head"
            ),
            triggers=PR_REVIEW_TRIGGER,
        )
        self.hosts[name] = host
        return host

    def env(self, host: Host, **more: str) -> dict[str, str]:
        return environment(
            {
                "HOOKSPAWN_REDIS_URL": self.redis_url,
                "HOOKSPAWN_WEBHOOK_SECRET": SECRET,
                "HOOKSPAWN_DATA_DIR": str(host.data),
                "HOOKSPAWN_AGENTS_DIR": str(host.agents),
                "HOOKSPAWN_RUNNER": "local",
                "HOOKSPAWN_GITHUB_APP_ID": self.github.app_id,
                "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH": str(host.root / "app.pem"),
                "HOOKSPAWN_GITHUB_API_URL": self.github.url,
                "HOOKSPAWN_GIT_URL_REWRITE": f"https://github.com/={self.git.url}/",
                "HOOKSPAWN_PUBLIC_URL": self.admin.url,
                "HOOKSPAWN_BROKER_PUBLIC_URL": self.broker.url,
                **{f"HOOKSPAWN_{k}": v for k, v in more.items()},
            }
        )

    def launch(self, name: str, argv: list[str], **more: str) -> Proc:
        host = self.host(name)
        proc = launch(name, [*HOOKSPAWN, *argv], env=self.env(host, **more), log=host.root / "log")
        self.procs.append(proc)
        return proc

    def web(self, name: str, port: int, broker_port: int) -> Proc:
        args = ["--host", "127.0.0.1", "--port", str(port), "--broker-port", str(broker_port)]
        return self.launch(name, ["web", *args])

    def worker(self, name: str) -> Proc:
        return self.launch(name, ["worker", "--concurrency", "1"])

    def runner(self, name: str) -> Proc:
        sandbox = sandbox_file(self.shared_dir, name=f"{name}-sandbox.json")
        proc = self.launch(
            name,
            ["runner", "--concurrency", str(SLOTS)],
            SANDBOX_CONFIG=str(sandbox),
            # session commands as the runner's own account, as the runner tests' stack runs them
            RUNNER_USER="",
            RUNNER_LEASE_SECONDS="2",
            RUNNER_STOP_GRACE="2s",
            HARNESS_COMMAND=f"/usr/bin/python3 -c {shlex.quote(HARNESS)}",
        )
        self.runners[name] = proc
        return proc

    def stop(self) -> None:
        """Every process asked to stop at once, then each waited for (and killed if need be)."""
        self.http.close()
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            proc.stop(10)

    # sessions ---------------------------------------------------------------------------
    def deliver(self, count: int, webhooks_dir: Path) -> list[str]:
        """POST `count` signed pull_request deliveries at once; the session each dispatched."""
        payload: dict[str, Any] = widgets_payload(webhooks_dir)
        payload["installation"]["id"] = INSTALLATION
        payload["repository"]["id"] = WIDGETS_ID
        raw = json.dumps(payload).encode()
        deliveries = [f"fleet-{uuid.uuid4().hex[:12]}" for _ in range(count)]
        for delivery in deliveries:
            answer = self.http.post(
                "/webhooks/github",
                content=raw,
                headers=webhook_headers(raw, "pull_request", delivery),
            )
            assert answer.status_code == 202, answer.text
        sessions: dict[str, str] = {}

        def dispatched() -> bool:
            for delivery in deliveries:
                if delivery not in sessions:
                    view = self.http.get(f"/deliveries/{delivery}").json()
                    outcomes = view.get("outcomes") or []
                    if view.get("status") == "processed":
                        assert [o["outcome"] for o in outcomes] == ["dispatched"], view
                        sessions[delivery] = outcomes[0]["sessionId"]
            return len(sessions) == count

        wait_for(dispatched, WAIT, 0.2, what=lambda: f"dispatched: {sessions}")
        return [sessions[d] for d in deliveries]

    def session(self, session_id: str) -> dict[str, Any]:
        answer = self.http.get(f"/sessions/{session_id}")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def root_of(self, session_id: str) -> Path:
        workspace = self.session(session_id).get("workspace")
        assert workspace, session_id
        return Path(workspace)

    def log_tail(self, session_id: str) -> str:
        """The end of the session's log, read on whichever runner's host holds it (the web
        reads only its own host's)."""
        for host in self.hosts.values():
            path = log_path(host.data, session_id)
            if path.is_file():
                return f"{host.name}: {path.read_text(errors='replace')[-1500:]}"
        return "(no log on any host)"

    def wait_harnesses(self, session_ids: list[str]) -> None:
        """Until each session runs and its harness has listed its tools (it then waits for its
        release)."""
        seen: dict[str, dict[str, Any]] = {}

        def waiting() -> bool:
            seen.update({s: self.session(s) for s in session_ids})
            return all(
                view["status"] == "running"
                and Path(view["workspace"], HOME, "mcp-result").is_file()
                for view in seen.values()
            )

        def found() -> str:
            return "harnesses waiting: " + str(
                {s: (v["status"], v["failure"], self.log_tail(s)) for s, v in seen.items()}
            )

        wait_for(waiting, WAIT, 0.2, what=found)

    def wait_ended(self, session_ids: list[str]) -> dict[str, dict[str, Any]]:
        ended: dict[str, dict[str, Any]] = {}

        def done() -> bool:
            for s in session_ids:
                seen = self.session(s)
                if seen["status"] in ("succeeded", "failed", "cancelled"):
                    ended[s] = seen
            return len(ended) == len(session_ids)

        wait_for(done, WAIT, 0.2, what=lambda: f"ended: {sorted(ended)} of {session_ids}")
        return ended

    def owners(self, session_ids: list[str]) -> dict[str, str]:
        """Session id → the runner (by name) that took it: its run record's owner is
        `host:pid:…`."""
        by_pid = {str(proc.pid): name for name, proc in self.runners.items()}
        client = redis.Redis.from_url(self.redis_url, decode_responses=True)
        try:
            owners = {s: str(client.hget(keys.session_run(s), "owner") or "") for s in session_ids}
        finally:
            client.close()
        return {s: by_pid.get(o.split(":")[1], o) if o else "" for s, o in owners.items()}


@pytest.fixture
@marks_tests("slow", "stack", timeout=300)
def fleet(redis_url: str, shared_dir: Path, origin: Origin) -> Iterator[Fleet]:
    with ExitStack() as stack:
        github = stack.enter_context(GitHubStandin())
        github.add_installation(
            INSTALLATION, "acme", repositories={WIDGETS_ID: "acme/widgets", 102: "acme/gadgets"}
        )
        git = stack.enter_context(
            GitServer(
                origin.root, permissions_of=lambda repo, token: github.permissions_on(repo, token)
            )
        )
        ports = [(free_port(), free_port()) for _ in range(2)]
        admin = stack.enter_context(Balancer([port for port, _ in ports]))
        broker = stack.enter_context(Balancer([port for _, port in ports]))
        fleet = Fleet(shared_dir, redis_url, github, git, admin, broker)
        stack.callback(fleet.stop)
        webs = [fleet.web(f"web-{n}", *pair) for n, pair in enumerate(ports, 1)]
        workers = [fleet.worker(f"worker-{n}") for n in (1, 2)]
        runners = [fleet.runner(f"runner-{n}") for n in ("a", "b")]
        for proc, (port, _) in zip(webs, ports, strict=True):
            wait_answering(proc, f"http://127.0.0.1:{port}", WAIT)
        for proc in workers + runners:
            wait_ready(proc, WAIT)
        # the first request of a just-started web on a busy machine: its own, longer wait
        try:
            synced = fleet.http.post("/connections/sync", timeout=WAIT)
        except httpx.HTTPError as exc:
            logs = "\n".join(f"--- {proc.name}:\n{proc.tail(1500)}" for proc in fleet.procs)
            state = (
                f"balancer accepting: {fleet.admin.accepting}, accept errors "
                f"{fleet.admin.accept_errors}, connections {fleet.admin.counts()}"
            )
            pytest.fail(
                f"the first sync got no answer ({exc!r}); {state}; the processes' logs:\n{logs}"
            )
        assert synced.status_code == 200, synced.text
        yield fleet


def test_a_fleet_spreads_sessions_survives_a_killed_runner_and_takes_a_new_one(
    fleet: Fleet, webhooks_dir: Path
) -> None:
    # a burst: as many sessions as the two runners have slots, every harness waiting
    burst = fleet.deliver(2 * SLOTS, webhooks_dir)
    fleet.wait_harnesses(burst)
    owners = fleet.owners(burst)
    assert Counter(owners.values()) == {"runner-a": SLOTS, "runner-b": SLOTS}, owners

    # runner-a dies mid-session: runner-b's sweep fails its two sessions runner_lost
    killed = fleet.runners["runner-a"]
    os.killpg(killed.pid, signal.SIGKILL)
    killed.popen.wait(10)
    lost = [s for s in burst if owners[s] == "runner-a"]
    kept = [s for s in burst if owners[s] == "runner-b"]
    ended = fleet.wait_ended(lost)

    # runner-c joins; runner-b's slots are still taken, so the new sessions are runner-c's
    joiner = fleet.runner("runner-c")
    wait_ready(joiner, WAIT)
    later = fleet.deliver(SLOTS, webhooks_dir)
    fleet.wait_harnesses(later)
    later_owners = fleet.owners(later)
    for session_id in kept + later:
        (fleet.root_of(session_id) / HOME / "release").write_text("")
    ended.update(fleet.wait_ended(kept + later))

    outcome = {s: (e["status"], (e["failure"] or {}).get("code")) for s, e in ended.items()}
    assert {s: outcome[s] for s in lost} == dict.fromkeys(lost, ("failed", "runner_lost"))
    assert {s: outcome[s] for s in kept + later} == dict.fromkeys(kept + later, ("succeeded", None))
    assert later_owners == dict.fromkeys(later, "runner-c"), later_owners
    assert fleet.owners(burst) == owners  # nobody took a lost session over

    runner_data = {name: fleet.hosts[name].data for name in fleet.runners}
    for session_id in burst + later:
        owner = (owners | later_owners)[session_id]
        # its root is where its runner keeps them, on that runner's "host" alone
        root = fleet.root_of(session_id)
        assert root == runner_data[owner] / "workspaces" / session_id, (owner, root)
        holding = [
            n for n, data in runner_data.items() if (data / "workspaces" / session_id).exists()
        ]
        assert holding == [owner], (session_id, holding)
        # the harness ran once, in all the fleet
        assert (root / HOME / "runs").read_text() == f"{session_id}\n"
        # it reached its MCP endpoint through the broker's public address
        result = json.loads((root / HOME / "mcp-result").read_text())
        assert result["url"] == f"{fleet.broker.url}/sessions/{session_id}/mcp"
        tools = {tool["name"] for tool in result["listed"]["result"]["tools"]}
        assert "get_file_contents" in tools, result

    for session_id in kept + later:
        # staging fetched over git with a credential the broker gave through the balancer
        audit = fleet.session(session_id)["audit"]
        assert any(e["kind"] == "git" and e["result"] == "allowed" for e in audit), audit
    # each web served the sessions' broker routes: the balancer spread them
    assert all(count > 0 for count in fleet.broker.counts().values()), fleet.broker.counts()
    # nothing of a session is on a web's or a worker's "host"
    for name, host in fleet.hosts.items():
        if name.startswith(("web", "worker")):
            assert not (host.data / "workspaces").exists(), name
