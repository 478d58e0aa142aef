"""As each run ends, whatever its outcome, the runner gives up the session credential it was
issued: the broker ends the session and revokes its GitHub tokens at GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis

from tests.conftest import wait_for
from tests.workers.session.runner.conftest import Origin
from tests.workers.session.runner.test_github_app import Stack, _prune, github_app_stack
from workers import keys


def _ended_entry(stack: Stack, session_id: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def ended() -> bool:
        audit = stack.http.get(f"/sessions/{session_id}").json()["audit"]
        found.update(next((a for a in audit if a.get("code") == "session_ended"), {}))
        return bool(found)

    wait_for(ended, timeout=30)
    return found


def test_a_succeeded_run_revokes_its_tokens_at_github(
    redis_url: str,
    redis_client: redis.Redis,
    shared_dir: Path,
    origin: Origin,
    webhooks_dir: Path,
) -> None:
    with github_app_stack(redis_url, shared_dir, origin) as stack:
        session_id = stack.deliver("app-pr-revoked", webhooks_dir)
        with stack.runner():
            session = stack.ended(session_id)
            entry = _ended_entry(stack, session_id)
        assert session["status"] == "succeeded", session
        assert "ended by its own credential" in entry["message"]
        tokens = {v for k, v in stack.secrets.items() if k.startswith("installation token")}
        assert tokens and tokens <= stack.github.revoked
        assert all(stack.github.permissions_on("acme/widgets", t) is None for t in tokens)
        credential = next(v for k, v in stack.secrets.items() if k.startswith("session cred"))
        refused = stack.http.post(
            f"/sessions/{session_id}/git-credential",
            json={"mountPath": "/workspace/widgets"},
            headers={"Authorization": f"Bearer {credential}"},
        )
        assert refused.status_code == 401
    kept = int(redis_client.ttl(keys.session(session_id)))
    assert kept - 5 <= int(redis_client.ttl(keys.session_ended(session_id))) <= kept


def test_a_failed_run_revokes_its_session_credential_too(
    redis_url: str,
    redis_client: redis.Redis,
    shared_dir: Path,
    origin: Origin,
    webhooks_dir: Path,
) -> None:
    with github_app_stack(redis_url, shared_dir, origin) as stack:
        session_id = stack.deliver("app-pr-failed-revoked", webhooks_dir)
        _prune(stack)
        with stack.runner():
            session = stack.ended(session_id)
            _ended_entry(stack, session_id)
    assert session["status"] == "failed", session
    assert any(k.startswith("session credential") for k in stack.secrets)
    assert redis_client.exists(keys.session_credentials(session_id)) == 0
    assert redis_client.exists(keys.session_ended(session_id)) == 1
