"""A session spawned under a manual connection (`connections add`): with an App configured, the
broker still mints it no token (no installation is behind the connection), and says so."""

from __future__ import annotations

from tests.workers.session.broker.conftest import BrokerEnv


def test_a_manual_connection_gets_no_token_even_with_an_app(broker_env: BrokerEnv) -> None:
    added = broker_env.client.post("/connections", json={"repository": "acme/tryout"})
    assert added.status_code == 201, added.text
    session = broker_env.start(
        "stray"
    )  # its mount checks out acme/tryout, which no installation covers
    before = broker_env.github.count("access_tokens")
    answer = broker_env.git_credential(session, mountPath="/workspace/widgets")
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert error["code"] == "github_not_configured"
    assert "manual connection" in error["message"]
    assert broker_env.github.count("access_tokens") == before
    listed = broker_env.client.get("/connections").json()["items"]
    assert [i["status"] for i in listed if i.get("manual")] == ["active"]
