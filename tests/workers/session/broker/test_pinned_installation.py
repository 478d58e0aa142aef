"""The tool gate decides through the installation the session was spawned with only, and
answers the decision alone: no GitHub token ever leaves hookspawn through it."""

from __future__ import annotations

from tests.workers.session.broker.conftest import INSTALLATION, BrokerEnv

VICTIM = 8  # another account's installation, known to the project


def _code(answer: object) -> str:
    import httpx

    assert isinstance(answer, httpx.Response)
    code: str = answer.json()["error"]["code"]
    return code


def _minted_at(env: BrokerEnv, installation_id: int) -> int:
    path = f"/app/installations/{installation_id}/access_tokens"
    return sum(1 for r in env.github.requests_to("access_tokens") if r.path == path)


def test_another_installations_repository_is_not_covered_and_nothing_is_minted(
    broker_env: BrokerEnv,
) -> None:
    broker_env.github.add_installation(
        VICTIM, "victim", repositories={201: "victim/secret", 101: "acme/widgets"}
    )
    assert broker_env.client.post("/connections/sync").status_code == 200
    writer = broker_env.start("writer")
    assert broker_env.target.sessions[writer.id]["mounts"][0]["installationId"] == INSTALLATION
    synced = _minted_at(broker_env, VICTIM)  # the sync listed its repositories

    for tool in ("get_file_contents", "create_or_update_file", "create_issue"):
        refused = broker_env.tool(writer, tool, "victim/secret")
        assert (refused.status_code, _code(refused)) == (403, "repository_not_covered"), tool
        assert "victim/secret" in refused.json()["error"]["message"]
    # the session's own installation no longer covers its mount: the other one is never used
    broker_env.rt.connections.prune(INSTALLATION, [101])
    mounted = broker_env.tool(writer, "get_file_contents", "acme/widgets")
    assert (mounted.status_code, _code(mounted)) == (403, "repository_not_covered")
    assert _minted_at(broker_env, VICTIM) == synced

    audit = broker_env.client.get(f"/sessions/{writer.id}").json()["audit"]
    assert {a["code"] for a in audit if a["kind"] == "tool"} == {"repository_not_covered"}


def test_a_tool_call_is_answered_with_the_decision_only(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    before = broker_env.github.count("access_tokens")
    for repository in ("acme/widgets", "acme/unmounted"):
        answer = broker_env.tool(writer, "create_issue", repository)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {
            "allowed": True,
            "permissions": {"issues": "write", "metadata": "read"},
            "repository": repository,
            "installationId": INSTALLATION,
        }
    assert broker_env.github.count("access_tokens") == before  # nothing minted

    schema = broker_env.client.get("/openapi.json").json()
    path = schema["paths"]["/sessions/{session_id}/github-tools/{tool}"]["post"]
    ref = path["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    assert set(fields) == {"allowed", "permissions", "repository", "installationId"}


def test_the_internal_tool_token_is_the_sessions_own_and_scoped(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    broker_env.tool(writer, "get_issue", "acme/widgets")  # the app builds its broker
    app_broker = broker_env.app.state.broker
    found = broker_env.rt.sessions.get(writer.id)
    assert found is not None
    spec = found.spec
    token = app_broker.tool_token(writer.id, spec, "create_issue", "acme/unmounted")
    assert broker_env.github.token_grant(token.token) == (
        INSTALLATION,
        (103,),
        {"issues": "write", "metadata": "read"},
    )
    assert broker_env.client.post(f"/sessions/{writer.id}/end").status_code == 200
    assert token.token in broker_env.github.revoked
