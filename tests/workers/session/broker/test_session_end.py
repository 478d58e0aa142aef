"""Credentials that end with their session: each session's own tokens, revoked at GitHub
before `POST /sessions/{id}/end` answers, refused by the stand-in (and real git) afterwards."""

from __future__ import annotations

import os
import subprocess

from tests import loopback
from tests.git_server import _ISOLATED
from tests.workers.session.broker.conftest import BrokerEnv


def _standin_accepts(env: BrokerEnv, token: str) -> int:
    answer = loopback.get(
        f"{env.github.url}/installation/repositories",
        headers={"Authorization": f"token {token}"},
        timeout=10,
    )
    return answer.status_code


def _clone_with(env: BrokerEnv, token: str, name: str) -> int:
    url = env.git.url_of("acme/widgets").replace("http://", f"http://x-access-token:{token}@")
    done = subprocess.run(
        ["git", "-c", "credential.helper=", "clone", "-q", url, str(env.tmp / name)],
        env={**os.environ, **_ISOLATED, "GIT_TERMINAL_PROMPT": "0"},
        capture_output=True,
        timeout=60,
    )
    return done.returncode


def test_a_token_used_after_end_is_refused_by_the_standin(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    broker_env.checkout(writer)
    token = broker_env.git_credential(writer, mountPath="/workspace/widgets").json()["password"]
    assert _standin_accepts(broker_env, token) == 200
    assert _clone_with(broker_env, token, "before") == 0

    ended = broker_env.client.post(f"/sessions/{writer.id}/end")
    assert ended.status_code == 200, ended.text
    assert ended.json() == {"id": writer.id, "revoked": 1, "tokens": {"revoked": 1, "failed": 0}}
    revokes = broker_env.github.requests_to("revoke_token")
    assert [r.headers["authorization"].split()[-1] for r in revokes] == [token]

    assert _standin_accepts(broker_env, token) == 401
    assert _clone_with(broker_env, token, "after") != 0
    assert broker_env.github.permissions_on("acme/widgets", token) is None
    audit = broker_env.client.get(f"/sessions/{writer.id}").json()["audit"]
    assert audit[0]["code"] == "session_ended"
    assert "1 GitHub token(s) revoked" in audit[0]["message"]


def test_each_session_has_its_own_tokens_and_ending_one_spares_the_other(
    broker_env: BrokerEnv,
) -> None:
    first, second = broker_env.start("writer"), broker_env.start("writer")
    ask = {"mountPath": "/workspace/widgets"}
    one = broker_env.git_credential(first, **ask).json()["password"]
    two = broker_env.git_credential(second, **ask).json()["password"]
    assert one != two
    assert broker_env.git_credential(first, **ask).json()["password"] == one
    assert broker_env.client.post(f"/sessions/{first.id}/end").status_code == 200
    assert _standin_accepts(broker_env, one) == 401
    assert _standin_accepts(broker_env, two) == 200
    assert broker_env.git_credential(second, **ask).json()["password"] == two


def test_a_session_may_end_itself_with_its_own_credential(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    token = broker_env.git_credential(writer, mountPath="/workspace/widgets").json()["password"]
    ended = broker_env.client.post(f"/sessions/{writer.id}/end", headers=writer.auth)
    assert ended.status_code == 200, ended.text
    assert ended.json()["tokens"] == {"revoked": 1, "failed": 0}
    assert _standin_accepts(broker_env, token) == 401
    audit = broker_env.client.get(f"/sessions/{writer.id}").json()["audit"]
    assert "ended by its own credential" in audit[0]["message"]
    again = broker_env.git_credential(writer, mountPath="/workspace/widgets")
    assert again.status_code == 401
