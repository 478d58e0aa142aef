"""The broker under `hookspawn web --workers 2`: a session's requests reach either process.

Each request here is sent through a connection the chosen process serves (read from /proc),
so a token minted by one process and ended through the other is the case under test, not
chance. The GitHub stand-in refuses a revoked token.
"""

from __future__ import annotations

import json
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest
import redis
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from hookspawn.serve.redis_server import RedisServer, free_port
from tests import loopback
from tests.dispatch_target import DispatchTarget, dispatch_target
from tests.github_standin import GitHubStandin
from tests.procs import Proc
from tests.secret_scan import leaks, redis_haystacks
from tests.suite_marks import marks_tests
from tests.web_processes import ask, start_web, web_children
from tests.workers.delivery.pipeline.conftest import write_agents
from tests.workers.session.broker.conftest import AGENTS, INSTALLATION, REPOS, Session
from workers.session.audit import FAILURE_LIMIT

WIDGETS = {"README.md": "widgets\n", "src/app.py": "print('hi')\n"}


@dataclass
class Web2:
    proc: Proc
    port: int
    github: GitHubStandin
    target: DispatchTarget
    redis_url: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def children(self) -> list[int]:
        found = web_children(self.proc)
        assert len(found) == 2, found
        return found

    def start(self, agent: str) -> Session:
        answer = loopback.post(
            f"{self.url}/agents/{agent}/sessions",
            headers={"Idempotency-Key": uuid.uuid4().hex},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        session_id = answer.json()["id"]
        spec = self.target.sessions[session_id]
        return Session(session_id, str(spec["broker"]["credential"]))

    def via(
        self, pid: int, method: str, path: str, body: Any = None, **headers: str
    ) -> tuple[int, Any]:
        """`method path` through a connection process `pid` serves: (status, JSON answer)."""
        payload = json.dumps(body).encode() if body is not None else None
        sent = {"Content-Type": "application/json", **headers} if payload else headers
        status, _, raw = ask(self.port, pid, self.children(), method, path, payload, sent)
        return status, json.loads(raw or b"null")


@pytest.fixture(scope="module")
@marks_tests("slow")
def web2(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web2]:
    """One `hookspawn web --workers 2` for the module: each test starts sessions of its own
    and counts the stand-in's requests from where it began."""
    flushed = redis.Redis.from_url(redis_server.url)
    flushed.flushall()
    flushed.close()
    tmp_path = tmp_path_factory.mktemp("web2")
    auto = write_agents(tmp_path, {k: textwrap.dedent(v) for k, v in AGENTS.items()})
    with GitHubStandin() as github, dispatch_target() as target:
        github.add_installation(INSTALLATION, "acme", repositories=REPOS)
        github.repos.add("acme/widgets", WIDGETS)
        key = tmp_path / "app.pem"
        key.write_text(github.private_key_pem)
        port = free_port()
        settings = {
            "HOOKSPAWN_REDIS_URL": redis_server.url,
            "HOOKSPAWN_DATA_DIR": str(tmp_path / "data"),
            "HOOKSPAWN_AGENTS_DIR": str(auto),
            "HOOKSPAWN_GITHUB_APP_ID": github.app_id,
            "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH": str(key),
            "HOOKSPAWN_GITHUB_API_URL": github.url,
            "HOOKSPAWN_DISPATCH_URL": target.url,
            "HOOKSPAWN_PUBLIC_URL": f"http://127.0.0.1:{port}",
        }
        proc = start_web(tmp_path / "web.log", port, settings, workers=2)
        try:
            synced = loopback.post(f"http://127.0.0.1:{port}/connections/sync", timeout=30)
            assert synced.status_code == 200, synced.text
            yield Web2(proc, port, github, target, redis_server.url)
        finally:
            proc.stop()


def _standin_accepts(web: Web2, token: str) -> int:
    answer = loopback.get(
        f"{web.github.url}/installation/repositories",
        headers={"Authorization": f"token {token}"},
        timeout=10,
    )
    return answer.status_code


def test_end_revokes_the_tokens_each_process_minted_and_none_is_readable(web2: Web2) -> None:
    first, second = web2.children()
    twice = web2.start("twice")  # two mounts of one repository, two scopes of token
    minted = len(web2.github.requests_to("access_tokens"))  # the spawn path's own so far
    revoked_before = len(web2.github.requests_to("revoke_token"))
    credential = f"/sessions/{twice.id}/git-credential"
    status, ro = web2.via(first, "POST", credential, {"mountPath": "/w/ro"}, **twice.auth)
    assert status == 200, ro
    status, rw = web2.via(second, "POST", credential, {"mountPath": "/w/rw"}, **twice.auth)
    assert status == 200, rw
    assert ro["password"] != rw["password"]
    # the other process reuses the token the first minted for that scope
    status, again = web2.via(second, "POST", credential, {"mountPath": "/w/ro"}, **twice.auth)
    assert status == 200 and again["password"] == ro["password"]
    assert len(web2.github.requests_to("access_tokens")) == minted + 2

    tokens = {"read-only token": ro["password"], "read-write token": rw["password"]}
    client = redis.Redis.from_url(web2.redis_url)
    try:
        found, scanned = leaks(tokens, redis_haystacks(client))
        assert scanned > 0 and found == []
        assert client.exists(f"hookspawn:session:{twice.id}:tokens") == 1
        status, ended = web2.via(first, "POST", f"/sessions/{twice.id}/end")
        assert status == 200, ended
        assert ended["tokens"] == {"revoked": 2, "failed": 0}
        assert client.exists(f"hookspawn:session:{twice.id}:tokens") == 0
    finally:
        client.close()
    revoked = [
        r.headers["authorization"].split()[-1]
        for r in web2.github.requests_to("revoke_token")[revoked_before:]
    ]
    assert sorted(revoked) == sorted(tokens.values())
    assert _standin_accepts(web2, ro["password"]) == 401
    assert _standin_accepts(web2, rw["password"]) == 401
    assert leaks(tokens, [("web log", web2.proc.log.read_bytes())])[0] == []


def test_another_session_keeps_its_tokens_whichever_process_ends_one(web2: Web2) -> None:
    first, second = web2.children()
    one, two = web2.start("writer"), web2.start("writer")
    ask = {"mountPath": "/workspace/widgets"}
    _, a = web2.via(first, "POST", f"/sessions/{one.id}/git-credential", ask, **one.auth)
    _, b = web2.via(second, "POST", f"/sessions/{two.id}/git-credential", ask, **two.auth)
    assert a["password"] != b["password"]
    status, ended = web2.via(second, "POST", f"/sessions/{one.id}/end")
    assert status == 200 and ended["tokens"] == {"revoked": 1, "failed": 0}
    assert _standin_accepts(web2, a["password"]) == 401
    assert _standin_accepts(web2, b["password"]) == 200
    _, same = web2.via(first, "POST", f"/sessions/{two.id}/git-credential", ask, **two.auth)
    assert same["password"] == b["password"]


def _mcp_request(method: str, request_id: int, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def test_mcp_requests_of_one_client_are_served_by_either_process(web2: Web2) -> None:
    first, second = web2.children()
    writer = web2.start("writer")
    endpoint = f"{web2.url}/sessions/{writer.id}/mcp"

    # by hand: initialize through one process, list and call through the other
    mcp_headers = {**writer.auth, "Accept": "application/json, text/event-stream"}
    path = f"/sessions/{writer.id}/mcp"
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    status, started = web2.via(
        first, "POST", path, _mcp_request("initialize", 1, init), **mcp_headers
    )
    assert status == 200, started
    version = started["result"]["protocolVersion"]
    headers = {**mcp_headers, "Mcp-Protocol-Version": version}
    status, listed = web2.via(second, "POST", path, _mcp_request("tools/list", 2, {}), **headers)
    assert status == 200, listed
    assert "get_file_contents" in {t["name"] for t in listed["result"]["tools"]}
    read = {
        "name": "get_file_contents",
        "arguments": {"owner": "acme", "repo": "widgets", "path": "src/app.py"},
    }
    minted = len(web2.github.requests_to("access_tokens"))
    revoked = len(web2.github.requests_to("revoke_token"))
    for n, pid in enumerate([second, first]):
        call = _mcp_request("tools/call", 3 + n, read)
        status, called = web2.via(pid, "POST", path, call, **headers)
        assert status == 200, called
        assert called["result"]["content"][0]["text"] == "print('hi')\n"
    # a token for each call, whichever process made it, revoked once it was made
    tokens = web2.github.requests_to("access_tokens")[minted:]
    assert len(tokens) == 2

    # the official client, a new connection per request: the kernel spreads them over both
    async def main() -> list[str]:
        texts = []
        for _ in range(3):
            async with (
                loopback.McpHttp(
                    headers=writer.auth,
                    timeout=30,
                    limits=httpx2.Limits(max_keepalive_connections=0),
                ) as http,
                streamable_http_client(endpoint, http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as client,
            ):
                await client.initialize()
                names = {t.name for t in (await client.list_tools()).tools}
                assert "create_issue" in names
                result = await client.call_tool(
                    "get_file_contents", {"owner": "acme", "repo": "widgets", "path": "README.md"}
                )
                assert not result.is_error
                texts.append(str(result.content[0].text))  # type: ignore[union-attr]
        return texts

    assert anyio.run(main) == ["widgets\n"] * 3
    # the tool calls of every process: a token each, none held once its call was made
    assert len(web2.github.requests_to("access_tokens")) == minted + 5
    deadline = time.monotonic() + 30
    while len(web2.github.requests_to("revoke_token")) < revoked + 5:
        assert time.monotonic() < deadline, "a tool call's token was not revoked"
        time.sleep(0.05)
    assert len(web2.github.requests_to("revoke_token")) == revoked + 5
    status, ended = web2.via(first, "POST", f"/sessions/{writer.id}/end")
    assert status == 200 and ended["tokens"] == {"revoked": 0, "failed": 0}


def test_failed_authentications_through_either_process_count_toward_one_limit(
    web2: Web2,
) -> None:
    first, second = web2.children()
    reader = web2.start("reader")
    wrong = {"Authorization": "Bearer not-the-credential"}
    credential = f"/sessions/{reader.id}/git-credential"
    ask_for = {"mountPath": "/workspace/widgets"}
    statuses = [
        web2.via(pid, "POST", credential, ask_for, **wrong)[0]
        for _ in range(FAILURE_LIMIT // 2)
        for pid in (first, second)
    ]
    assert statuses == [401] * FAILURE_LIMIT
    for pid in (first, second):
        status, limited = web2.via(pid, "POST", credential, ask_for, **wrong)
        assert status == 429 and limited["error"]["code"] == "too_many_failures"
    status, session = web2.via(first, "GET", f"/sessions/{reader.id}")
    assert session["failedAuthentications"]["count"] == FAILURE_LIMIT + 2
