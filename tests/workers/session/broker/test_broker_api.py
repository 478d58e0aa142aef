"""The broker's HTTP interface: session credentials, git credentials, the tool gate,
the audit trail, and what never leaks (credentials and tokens in Redis, logs, stored specs)."""

from __future__ import annotations

import logging

import pytest

from agents.github_tools import TOOLS
from tests.secret_scan import leaks, redis_haystacks
from tests.workers.session.broker.conftest import BROKER_URL, INSTALLATION, BrokerEnv, Session
from workers.session.credentials import credential_hash


def _code(response: object) -> str:
    import httpx

    assert isinstance(response, httpx.Response)
    body = response.json()
    assert set(body) == {"error"}, body
    code: str = body["error"]["code"]
    return code


# session credentials ----------------------------------------------------------------------


def test_spec_carries_broker_access_once_and_stores_only_a_hash(broker_env: BrokerEnv) -> None:
    reader = broker_env.start("reader")
    dispatched = broker_env.target.sessions[reader.id]
    assert dispatched["broker"] == {
        "url": f"{BROKER_URL}/sessions/{reader.id}",
        "credential": reader.credential,
    }
    assert len(reader.credential) >= 40

    stored = broker_env.client.get(f"/sessions/{reader.id}").json()
    assert stored["broker"] == {"url": f"{BROKER_URL}/sessions/{reader.id}"}
    client = broker_env.rt.client
    hashes = client.hgetall(f"hookspawn:session:{reader.id}:credentials")
    assert list(hashes) == [credential_hash(reader.credential).encode()]
    assert 0 < client.ttl(f"hookspawn:session:{reader.id}:credentials") <= 24 * 3600


def test_no_broker_for_a_session_without_github_app_mount(broker_env: BrokerEnv) -> None:
    public = broker_env.start("public")
    assert broker_env.target.sessions[public.id]["broker"] is None
    assert public.credential == ""


def test_wrong_or_foreign_credential_is_401(broker_env: BrokerEnv) -> None:
    reader, writer = broker_env.start("reader"), broker_env.start("writer")
    for session in (
        Session(reader.id, "not-the-credential"),
        Session(reader.id, writer.credential),
        Session(reader.id, "-"),
    ):
        answer = broker_env.git_credential(session, mountPath="/workspace/widgets")
        assert answer.status_code == 401
        assert _code(answer) == "invalid_credential"
    admin_less = broker_env.client.get(f"/sessions/{reader.id}/github-tools")
    assert admin_less.status_code == 401


# git credentials --------------------------------------------------------------------------


def test_git_credential_by_mount_path_and_by_url(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    by_path = broker_env.git_credential(writer, mountPath="/workspace/widgets")
    assert by_path.status_code == 200, by_path.text
    answer = by_path.json()
    assert answer["username"] == "x-access-token"
    assert answer["permissions"] == {"contents": "write", "metadata": "read"}
    assert answer["expiresAt"].endswith("Z")
    grant = broker_env.github.token_grant(answer["password"])
    assert grant == (INSTALLATION, (101,), {"contents": "write", "metadata": "read"})

    by_url = broker_env.git_credential(writer, host="github.com", path="acme/widgets.git")
    assert by_url.status_code == 200
    assert by_url.json()["password"] == answer["password"]  # the session's own token, reused

    elsewhere = broker_env.git_credential(writer, host="evil.example", path="acme/widgets.git")
    assert elsewhere.status_code == 404
    assert _code(elsewhere) == "mount_not_found"
    missing = broker_env.git_credential(writer, mountPath="/workspace/other")
    assert _code(missing) == "mount_not_found"


def test_workflows_ride_on_the_git_credential_only_when_granted(broker_env: BrokerEnv) -> None:
    session = broker_env.start("workflows")
    answer = broker_env.git_credential(session, mountPath="/workspace/widgets").json()
    assert answer["permissions"] == {"contents": "write", "workflows": "write", "metadata": "read"}


def test_coverage_is_rechecked_and_refusals_prune(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    broker_env.github.fail_next("access_tokens", "repository_inaccessible")
    revoked = broker_env.git_credential(writer, mountPath="/workspace/widgets")
    assert revoked.status_code == 403
    assert _code(revoked) == "repository_access_revoked"

    calls = broker_env.github.count("access_tokens")
    again = broker_env.git_credential(writer, mountPath="/workspace/widgets")
    assert _code(again) == "repository_not_covered"
    assert broker_env.github.count("access_tokens") == calls  # pruned: no GitHub call
    tool = broker_env.tool(writer, "get_file_contents", "acme/widgets")
    assert _code(tool) == "repository_not_covered"


# the tool gate ----------------------------------------------------------------------------


def _tools(env: BrokerEnv, session: Session) -> list[str]:
    answer = env.client.get(f"/sessions/{session.id}/github-tools", headers=session.auth)
    assert answer.status_code == 200, answer.text
    items: list[str] = answer.json()["items"]
    return items


def test_tool_visibility_follows_mounts_and_the_allowlist(broker_env: BrokerEnv) -> None:
    reader, merger = broker_env.start("reader"), broker_env.start("merger")
    narrow = broker_env.start("narrow")
    seen = _tools(broker_env, reader)
    assert "get_file_contents" in seen and "create_pull_request" in seen
    assert "create_or_update_file" not in seen and "push_files" not in seen
    assert "merge_pull_request" not in seen and "actions_secret_list" not in seen
    merged = _tools(broker_env, merger)
    assert {"merge_pull_request", "enable_pull_request_auto_merge", "actions_secret_list"} <= set(
        merged
    )
    assert "actions_secret_write" not in merged
    assert _tools(broker_env, narrow) == ["create_issue", "get_file_contents"]


def test_tool_calls_are_rechecked_against_the_repository_mount(broker_env: BrokerEnv) -> None:
    merger = broker_env.start("merger")
    merge = broker_env.tool(merger, "merge_pull_request", "acme/widgets")
    assert merge.status_code == 200, merge.text
    answer = merge.json()
    assert answer["allowed"] is True
    assert answer["permissions"] == {
        "contents": "write",
        "pull_requests": "write",
        "metadata": "read",
    }
    assert answer == {**answer, "repository": "acme/widgets", "installationId": INSTALLATION}
    secrets = broker_env.tool(merger, "actions_secret_list", "Acme/Widgets")
    assert secrets.json()["permissions"] == {"secrets": "read", "metadata": "read"}

    # a covered repository no mount names: default capabilities, merge and secrets denied
    unmounted_merge = broker_env.tool(merger, "merge_pull_request", "acme/unmounted")
    assert unmounted_merge.status_code == 403
    assert _code(unmounted_merge) == "tool_not_granted"
    assert _code(broker_env.tool(merger, "actions_secret_list", "acme/unmounted")) == (
        "tool_not_granted"
    )
    issue = broker_env.tool(merger, "create_issue", "acme/unmounted")
    assert issue.status_code == 200
    assert issue.json() == {
        "allowed": True,
        "permissions": {"issues": "write", "metadata": "read"},
        "repository": "acme/unmounted",
        "installationId": INSTALLATION,
    }
    # uncovered, unknown
    assert _code(broker_env.tool(merger, "get_issue", "someone/else")) == "repository_not_covered"
    unknown = broker_env.tool(merger, "delete_repository", "acme/widgets")
    assert unknown.status_code == 404
    assert _code(unknown) == "unknown_tool"


def test_a_contents_writing_tools_token_carries_workflows_when_the_mount_grants_them(
    broker_env: BrokerEnv,
) -> None:
    """The token hookspawn would call GitHub with (the broker's tool_token), as the stand-in
    minted it: `workflows: write` rides on the contents family's writes (and merging) when
    the repository's mount grants it, never on a read, never without the grant."""
    workflows, writer = broker_env.start("workflows"), broker_env.start("writer")
    broker_env.tool(workflows, "get_issue", "acme/widgets")  # the app builds its broker
    app_broker = broker_env.app.state.broker

    def minted(session: Session, tool: str, repository: str = "acme/widgets") -> dict[str, str]:
        found = broker_env.rt.sessions.get(session.id)
        assert found is not None
        token = app_broker.tool_token(session.id, found.spec, tool, repository)
        grant = broker_env.github.token_grant(token.token)
        assert grant is not None and grant[0] == INSTALLATION
        assert token.permissions == grant[2]
        return grant[2]

    for tool in ("create_or_update_file", "push_files", "delete_file", "create_branch"):
        expected = {"contents": "write", "workflows": "write", "metadata": "read"}
        assert minted(workflows, tool) == expected, tool
        assert broker_env.tool(workflows, tool, "acme/widgets").json()["permissions"] == expected
        assert minted(writer, tool) == {"contents": "write", "metadata": "read"}, tool
    assert minted(workflows, "get_file_contents") == {"contents": "read", "metadata": "read"}
    assert minted(workflows, "create_issue") == {"issues": "write", "metadata": "read"}
    # a repository no mount names has the defaults: workflows none
    unmounted = minted(workflows, "create_or_update_file", "acme/unmounted")
    assert unmounted == {"contents": "write", "metadata": "read"}


def test_one_repository_mounted_twice_tools_use_the_union_of_its_grants(
    broker_env: BrokerEnv,
) -> None:
    """`twice`: /w/ro grants contents read and pull requests write, /w/rw contents and
    workflows write and no pull requests. Tools on acme/widgets get both mounts' grants, each
    call audited under the mount that grants it."""
    session = broker_env.start("twice")
    seen = _tools(broker_env, session)
    assert "create_pull_request" in seen and "create_or_update_file" in seen
    pull = broker_env.tool(session, "create_pull_request", "acme/widgets")
    assert pull.status_code == 200, pull.text
    assert pull.json()["permissions"] == {"pull_requests": "write", "metadata": "read"}
    write = broker_env.tool(session, "create_or_update_file", "acme/widgets")
    assert write.status_code == 200, write.text
    assert write.json()["permissions"] == {
        "contents": "write",
        "workflows": "write",
        "metadata": "read",
    }
    merge = broker_env.tool(session, "merge_pull_request", "acme/widgets")
    assert _code(merge) == "tool_not_granted"
    audit = broker_env.client.get(f"/sessions/{session.id}").json()["audit"]
    tools = [
        (a["tool"], a["result"], a.get("mountPath")) for a in reversed(audit) if a["kind"] == "tool"
    ]
    assert tools == [
        ("create_pull_request", "allowed", "/w/ro"),
        ("create_or_update_file", "allowed", "/w/rw"),
        ("merge_pull_request", "denied", None),
    ]


def test_allowlist_narrows_calls_too(broker_env: BrokerEnv) -> None:
    narrow = broker_env.start("narrow")
    assert broker_env.tool(narrow, "get_file_contents", "acme/widgets").status_code == 200
    refused = broker_env.tool(narrow, "create_pull_request", "acme/widgets")
    assert refused.status_code == 403
    assert _code(refused) == "tool_not_granted"


def test_contents_read_never_obtains_a_token_that_pushes(broker_env: BrokerEnv) -> None:
    reader = broker_env.start("reader")
    tokens: list[str] = []
    git = broker_env.git_credential(reader, mountPath="/workspace/widgets")
    assert git.status_code == 200
    tokens.append(git.json()["password"])
    by_url = broker_env.git_credential(
        reader, protocol="https", host="github.com", path="acme/widgets"
    )
    tokens.append(by_url.json()["password"])
    allowed = 0
    for tool in TOOLS:
        answer = broker_env.tool(reader, tool, "acme/widgets")
        assert answer.status_code in (200, 403), (tool, answer.text)
        if answer.status_code == 200:
            allowed += 1
            assert answer.json()["permissions"].get("contents") != "write"
            assert "workflows" not in answer.json()["permissions"]
    assert allowed > 5
    for token in tokens:
        granted = broker_env.github.permissions_on("acme/widgets", token)
        assert granted is not None
        assert granted.get("contents") != "write"
        assert "workflows" not in granted


# audit, metrics, UI and what never leaks --------------------------------------------------


def test_audit_metrics_ui_and_no_leaks(
    broker_env: BrokerEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    reader, blind = broker_env.start("reader"), broker_env.start("blind")
    token = broker_env.git_credential(reader, mountPath="/workspace/widgets").json()["password"]
    assert broker_env.tool(reader, "get_issue", "acme/widgets").status_code == 200
    assert broker_env.tool(reader, "create_or_update_file", "acme/widgets").status_code == 403
    assert broker_env.git_credential(blind, mountPath="/workspace/widgets").status_code == 403
    assert broker_env.client.post(f"/sessions/{reader.id}/end").status_code == 200
    assert broker_env.git_credential(reader, mountPath="/workspace/widgets").status_code == 401

    view = broker_env.client.get(f"/sessions/{reader.id}").json()
    audit = view["audit"]
    seen = [(a["kind"], a["result"], a.get("code")) for a in reversed(audit)]
    assert seen == [
        ("session", "allowed", None),
        ("git", "allowed", None),
        ("tool", "allowed", None),
        ("tool", "denied", "tool_not_granted"),
        ("session", "denied", "session_ended"),
    ]
    assert view["failedAuthentications"]["count"] == 1
    first = audit[-2]
    assert first["repository"] == "acme/widgets"
    assert first["mountPath"] == "/workspace/widgets"
    assert first["permissions"] == {"contents": "read", "metadata": "read"}
    assert audit[-3]["tool"] == "get_issue"
    blind_audit = broker_env.client.get(f"/sessions/{blind.id}").json()["audit"]
    assert [a.get("code") for a in blind_audit] == ["no_git_credential", None]

    page = broker_env.client.get(f"/ui/sessions/{reader.id}").text
    assert "tool_not_granted" in page and "1 failed authentication(s)" in page

    metrics = broker_env.client.get("/metrics").text
    assert 'hookspawn_credentials_total{kind="git",result="allowed"} 1.0' in metrics
    assert 'hookspawn_credentials_total{kind="git",result="denied"} 2.0' in metrics
    assert 'hookspawn_credentials_total{kind="tool",result="denied"} 1.0' in metrics
    assert 'hookspawn_credentials_total{kind="session",result="allowed"} 2.0' in metrics
    unknown = broker_env.client.post("/sessions/hs-nope/end")
    assert (unknown.status_code, _code(unknown)) == (404, "session_not_found")

    secrets = {
        "reader credential": reader.credential,
        "blind credential": blind.credential,
        "git token": token,
    }
    stored = broker_env.client.get("/sessions").content
    logs = "\n".join(r.getMessage() for r in caplog.records).encode()
    found, scanned = leaks(
        secrets,
        [
            *redis_haystacks(broker_env.rt.client),
            ("stored sessions", stored),
            ("logs", logs),
        ],
    )
    assert scanned > 20
    assert found == []
    dispatched = [str(s).encode() for s in broker_env.target.sessions.values()]
    assert leaks({"git token": token}, [("specs", b"".join(dispatched))])[0] == []


def test_a_mount_is_minted_only_from_the_installation_it_was_spawned_with(
    broker_env: BrokerEnv,
) -> None:
    broker_env.github.add_installation(
        INSTALLATION + 1, "acme-too", repositories={101: "acme/widgets"}
    )
    assert broker_env.client.post("/connections/sync").status_code == 200
    writer = broker_env.start("writer")
    assert broker_env.target.sessions[writer.id]["mounts"][0]["installationId"] == INSTALLATION
    broker_env.rt.connections.prune(INSTALLATION, [101])

    calls = broker_env.github.count("access_tokens")
    refused = broker_env.git_credential(writer, mountPath="/workspace/widgets")
    assert (refused.status_code, _code(refused)) == (403, "repository_not_covered")
    assert _code(broker_env.tool(writer, "get_issue", "acme/widgets")) == "repository_not_covered"
    assert broker_env.github.count("access_tokens") == calls  # the other installation is not used
