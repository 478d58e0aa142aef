"""The broker listener: what a session's sandbox may reach answers that session's broker routes
with its credential and nothing else, over real HTTP (`hookspawn web`'s two sockets), with and
without an admin token; and from inside srt, the admin API's port is refused by the proxy."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp.client.session import ClientSession

from agents.sandbox.config import SandboxConfig
from tests import loopback, tool_marks
from tests.conftest import webhook_headers
from tests.live_server import Listening, live_listeners
from tests.workers.session.broker.conftest import BrokerEnv
from tests.workers.session.broker.test_mcp_endpoint import _mcp
from workers.runtime import build_runtime
from workers.session.runner.sandbox import confine, srt_scratch
from workers.session.runner.session_git import admin_destinations, session_destinations
from workers.session.runner.staging import BrokerLink

ADMIN_TOKEN = "admin-token-of-the-test"

#: what an attacker in a sandbox would ask the broker's host and port for: the admin API
ADMIN_PROBES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/agents/writer/sessions", {"json": {}}),
    ("GET", "/github-app/new", {}),
    ("GET", "/github-app/callback?code=a&state=b", {}),
    ("POST", "/connections", {"json": {"repository": "acme/other"}}),
    ("POST", "/connections/sync", {}),
    ("GET", "/connections", {}),
    ("GET", "/deliveries", {}),
    ("GET", "/sessions", {}),
    ("GET", "/metrics", {}),
    ("GET", "/ui", {}),
    ("GET", "/ui/login", {}),
    ("GET", "/openapi.json", {}),
    ("GET", "/docs", {}),
    ("POST", "/explain", {"json": {"event": "ping", "payload": {}}}),
    ("GET", "/agents", {}),
    ("GET", "/healthz", {}),
]
REFUSED = {401, 403, 404}


@contextmanager
def listening(env: BrokerEnv, *, admin_token: str | None = None) -> Iterator[Listening]:
    """`hookspawn web`'s two listeners over the store of `env` (its sessions and connections),
    with `admin_token` set or not."""
    if admin_token is None:
        with live_listeners(env.rt) as where:
            yield where
        return
    rt = build_runtime(env.rt.settings.model_copy(update={"admin_token": admin_token}))
    try:
        with live_listeners(rt) as where:
            yield where
    finally:
        rt.close()


def _probe(base: str, headers: dict[str, str]) -> dict[str, int]:
    with loopback.Client(base_url=base, headers=headers, timeout=30) as http:
        return {
            f"{method} {path}": http.request(method, path, **kwargs).status_code
            for method, path, kwargs in ADMIN_PROBES
        }


@pytest.mark.parametrize("admin_token", [None, ADMIN_TOKEN], ids=["no-admin-token", "admin-token"])
def test_the_broker_listener_answers_no_admin_route(
    broker_env: BrokerEnv, admin_token: str | None
) -> None:
    writer = broker_env.start("writer")
    before = broker_env.client.get("/sessions").json()["items"]
    token = {"Authorization": f"Bearer {admin_token}"} if admin_token else {}
    with listening(broker_env, admin_token=admin_token) as where:
        bare = _probe(where.broker, {})
        with_token = _probe(where.broker, token)
        as_session = _probe(where.broker, writer.auth)
        # the same paths on the admin API's own port are its routes
        with loopback.Client(base_url=where.admin, headers=token, timeout=30) as http:
            admin = [http.get(path).status_code for path in ("/sessions", "/deliveries", "/ui")]
    for answers in (bare, with_token, as_session):
        assert {k: v for k, v in answers.items() if v not in REFUSED} == {}, answers
    assert admin == [200, 200, 200], admin
    # nothing was started or connected through the broker listener
    after = broker_env.client.get("/sessions").json()["items"]
    assert after == before
    connections = broker_env.client.get("/connections").json()
    assert "acme/other" not in json.dumps(connections)


def test_the_broker_listener_serves_the_session_routes_with_its_credential(
    broker_env: BrokerEnv,
) -> None:
    broker_env.github.repos.add("acme/widgets", {"README.md": "widgets\n"})
    reader, writer = broker_env.start("reader"), broker_env.start("writer")
    with listening(broker_env, admin_token=ADMIN_TOKEN) as where:
        http = loopback.Client(base_url=where.broker, timeout=30)
        own = f"/sessions/{reader.id}"
        tools = http.get(f"{own}/github-tools", headers=reader.auth)
        credential = http.post(
            f"{own}/git-credential", json={"mountPath": "/workspace/widgets"}, headers=reader.auth
        )
        decision = http.post(
            f"{own}/github-tools/get_file_contents",
            json={"repository": "acme/widgets"},
            headers=reader.auth,
        )

        async def listed(client: ClientSession) -> list[str]:
            return [tool.name for tool in (await client.list_tools()).tools]

        mcp_tools = _mcp(broker_env, reader, listed, url=f"{where.broker}{own}")
        # another session's routes with this one's credential, or with none
        other = f"/sessions/{writer.id}"
        crossed = [
            http.get(f"{other}/github-tools", headers=reader.auth).status_code,
            http.post(f"{other}/mcp", json={}, headers=reader.auth).status_code,
            http.post(f"{other}/end", headers=reader.auth).status_code,
            http.post(f"{other}/end").status_code,
        ]
        # the admin token ends no session here, though it does on the admin API's port
        by_admin = http.post(other + "/end", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        writer_still = http.get(f"{other}/github-tools", headers=writer.auth).status_code
        # a signed webhook is not intake here: nothing is recorded
        body = b"{}"
        intake = http.post(
            "/webhooks/github", content=body, headers=webhook_headers(body, "ping", "d-broker")
        )
        # the session gives up its credential here, and it is refused from then on
        ended = http.post(f"{own}/end", headers=reader.auth)
        after = http.get(f"{own}/github-tools", headers=reader.auth).status_code
        http.close()
    assert tools.status_code == 200 and "get_file_contents" in tools.json()["items"], tools.text
    assert credential.status_code == 200, credential.text
    assert credential.json()["username"] == "x-access-token"
    assert decision.status_code == 200 and decision.json()["allowed"] is True, decision.text
    assert "get_file_contents" in mcp_tools
    assert crossed == [401, 401, 401, 401], crossed
    assert by_admin.status_code == 401, by_admin.text
    assert by_admin.json()["error"]["code"] == "invalid_credential"
    assert writer_still == 200
    assert intake.status_code == 404, intake.text
    assert broker_env.client.get("/deliveries/d-broker").status_code == 404
    assert ended.status_code == 200, ended.text
    assert ended.json()["revoked"] >= 1
    assert after == 401


#: run in the sandbox as a session's command: for each `METHOD URL` pair, the status it got
#: through srt's proxy (the only way out), or the proxy's refusal, each request carrying the
#: session's credential (what the sandbox holds); `$BROKER` is the host and port of
#: $HOOKSPAWN_BROKER_URL, `$ADMIN` the admin API's port
PROBE = """
import os, sys, urllib.error, urllib.parse, urllib.request as r
broker = urllib.parse.urlsplit(os.environ["HOOKSPAWN_BROKER_URL"])
os.environ.update(NO_PROXY="", no_proxy="")
opener = r.build_opener(r.ProxyHandler({"http": os.environ["http_proxy"]}))
for method, url in zip(sys.argv[1::2], sys.argv[2::2]):
    url = url.replace("$BROKER", broker.netloc)
    url = url.replace("$ADMIN", os.environ.get("ADMIN_PORT", "$ADMIN"))
    auth = {"Authorization": "Bearer " + os.environ["HOOKSPAWN_SESSION_CREDENTIAL"]}
    data = b"{}" if method == "POST" else None
    request = r.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", **auth})
    try:
        with opener.open(request, timeout=20) as answer:
            print(method, url, answer.status)
    except urllib.error.HTTPError as exc:
        print(method, url, exc.code, exc.headers.get("X-Proxy-Error") or "")
    except urllib.error.URLError as exc:
        print(method, url, "unreachable", type(exc.reason).__name__)
"""


@pytest.mark.needs("srt")
@pytest.mark.parametrize(
    "allowed", [[], ["127.0.0.1", "localhost"]], ids=["no-allowed-domains", "loopback-allowed"]
)
@pytest.mark.slow
def test_from_inside_srt_the_broker_host_reaches_no_admin_route(
    broker_env: BrokerEnv, tmp_path: Path, allowed: list[str]
) -> None:
    tool_marks.require("srt")
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    assert python is not None
    reader = broker_env.start("reader")
    workspace = tmp_path / "workspaces" / "s1"
    (workspace / "home" / "user").mkdir(parents=True)
    scratch = srt_scratch(None)
    try:
        with listening(broker_env) as where:
            admin_port = str(urlsplit(where.admin).port)
            broker_url = f"{where.broker}/sessions/{reader.id}"
            link = BrokerLink(broker_url, reader.credential)
            own = f"http://$BROKER/sessions/{reader.id}"
            requests = [
                ("GET", f"{own}/github-tools"),
                *(
                    (method, f"http://$BROKER{path.partition('?')[0]}")
                    for method, path, _ in ADMIN_PROBES
                ),
                ("GET", "http://127.0.0.1:$ADMIN/sessions"),
                ("POST", "http://127.0.0.1:$ADMIN/agents/writer/sessions"),
                ("GET", "http://localhost:$ADMIN/deliveries"),
                ("GET", "http://[::1]:$ADMIN/deliveries"),
                ("GET", "http://127.1:$ADMIN/deliveries"),
            ]
            argv, env = confine(
                [python, "-c", PROBE, *(part for request in requests for part in request)],
                workspace=workspace,
                config=SandboxConfig(backend="srt"),
                env={
                    "PATH": "/usr/bin:/bin",
                    "HOME": str(workspace / "home" / "user"),
                    "HOOKSPAWN_BROKER_URL": broker_url,
                    "HOOKSPAWN_SESSION_CREDENTIAL": reader.credential,
                    "ADMIN_PORT": admin_port,
                },
                scratch=scratch,
                allowed_domains=allowed,
                destinations=session_destinations(link, [], []),
                # as the runner denies it: the admin API is where HOOKSPAWN_PUBLIC_URL says
                denied_domains=admin_destinations(where.admin, None),
            )
            done = subprocess.run(
                argv, env=env, cwd=workspace, capture_output=True, text=True, timeout=180
            )
            sessions_after = broker_env.client.get("/sessions").json()["items"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(requests), done.stdout
    answers = {line.split(" ")[1]: line.split(" ", 2)[2] for line in lines}
    # its own broker route answers with its credential
    assert answers[f"http://{urlsplit(where.broker).netloc}/sessions/{reader.id}/github-tools"] == (
        "200"
    )
    broker_host = urlsplit(where.broker).netloc
    for method, path, _ in ADMIN_PROBES:
        status = answers[f"http://{broker_host}{path.partition('?')[0]}"].split(" ")[0]
        assert int(status) in REFUSED, (method, path, status)
    # the admin API's port is refused by srt's proxy itself (403 with its X-Proxy-Error), by
    # every name of it, whatever HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS lists
    for host in ("127.0.0.1", "localhost", "[::1]", "127.1"):
        refused = [v for k, v in answers.items() if k.startswith(f"http://{host}:{admin_port}/")]
        assert refused, (host, answers)
        for answer in refused:
            assert answer.startswith("403 ") and "blocked" in answer.lower(), (host, answer)
    assert [s["id"] for s in sessions_after] == [reader.id], "the sandbox started a session"
