"""As each run ends, whatever its outcome, the runner gives up the session credential it was
issued: the broker ends the session and revokes its GitHub tokens at GitHub. However a session
ends (its runner killed included), a credential its commands copied out is refused after."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.conftest import wait_for
from tests.workers.session.runner.conftest import Origin, runner_process
from tests.workers.session.runner.test_github_app import Stack, _prune, github_app_stack
from workers import keys
from workers.session.runner.service import RunnerService


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


def _copying(then: str) -> str:
    """A command line that copies the session credential to $HOME/credential (where the test
    reads it on the host, as an attacker's harness would keep it), then runs `then`."""
    return f'printf %s "$HOOKSPAWN_SESSION_CREDENTIAL" > "$HOME/credential"; {then}'


def _copied(stack: Stack, session_id: str) -> str:
    """The credential the session's command copied out, once it has."""
    found: list[str] = []

    def copied() -> bool:
        workspace = stack.http.get(f"/sessions/{session_id}").json().get("workspace")
        path = Path(workspace or "/nonexistent") / "home" / "user" / "credential"
        found[:] = [path.read_text()] if path.is_file() and path.stat().st_size else []
        return bool(found)

    wait_for(copied, timeout=60, what="the session's command copying its credential")
    return found[0]


def _git_credential(stack: Stack, session_id: str, credential: str) -> httpx.Response:
    return stack.http.post(
        f"/sessions/{session_id}/git-credential",
        json={"mountPath": "/workspace/widgets"},
        headers={"Authorization": f"Bearer {credential}"},
    )


def _refused(answer: httpx.Response) -> None:
    assert answer.status_code == 401, answer.text
    assert answer.json()["error"]["code"] == "invalid_credential"


def test_a_killed_runners_session_credential_is_refused_once_it_is_swept(
    redis_url: str,
    redis_client: redis.Redis,
    shared_dir: Path,
    origin: Origin,
    webhooks_dir: Path,
) -> None:
    line = f"sleep 600.{uuid.uuid4().int % 10**9}"
    settings: dict[str, Any] = {
        "harness_command": _copying(f"exec {line}"),
        "runner_lease_seconds": 1.0,
    }
    with github_app_stack(redis_url, shared_dir, origin, **settings) as stack:
        session_id = stack.deliver("app-pr-lost-runner", webhooks_dir)
        run = keys.session_run(session_id)
        # session commands as this account, as the stack's own runner runs them
        with runner_process(
            stack.settings, shared_dir / "runner.log", env={"HOOKSPAWN_RUNNER_USER": ""}
        ) as runner:
            credential = _copied(stack, session_id)
            before = _git_credential(stack, session_id, credential)
            assert before.status_code == 200, before.text  # the copy works while it runs
            token = before.json()["password"]
            os.killpg(runner.pid, signal.SIGKILL)
            runner.popen.wait(10)
        assert redis_client.hget(run, "status") == b"running"  # nothing ended it yet
        with stack.runner():  # another runner's sweep finds the lease run out
            wait_for(lambda: redis_client.hget(run, "status") == b"failed", timeout=30)
        failure = json.loads(redis_client.hget(run, "failure") or b"{}")
        after = _git_credential(stack, session_id, credential)
        # the web revokes at GitHub the tokens the broker minted for it
        wait_for(lambda: token in stack.github.revoked, timeout=30, what="the token revoked")
        entry = _ended_entry(stack, session_id)
    assert failure["code"] == "runner_lost"
    _refused(after)
    assert "ended without its broker" in entry["message"]
    assert redis_client.exists(keys.session_credentials(session_id)) == 0


def _cancel(stack: Stack, service: RunnerService, session_id: str) -> None:
    answer = stack.http.post(f"/sessions/{session_id}/cancel")
    assert answer.status_code == 200, answer.text


def _stop_runner(stack: Stack, service: RunnerService, session_id: str) -> None:
    service.runner.stop.begin(cold=True)


def _wait(stack: Stack, service: RunnerService, session_id: str) -> None:
    """The session ends on its own (it fails)."""


SLEEPING = _copying("exec sleep 600")
SETUP_COPYING = [{"name": "deps", "commands": [_copying("true"), "exit 3"]}]
SETUP_THEN_SLEEPING = [{"name": "deps", "commands": [_copying("true")]}]


@pytest.mark.parametrize(
    ("overrides", "setup", "end", "ended"),
    [
        ({"harness_command": SLEEPING}, None, _cancel, ("cancelled", None)),
        ({"harness_command": SLEEPING}, None, _stop_runner, ("failed", "runner_stopped")),
        (
            # setup copies it (the harness's budget may run out before its own command starts,
            # on a loaded machine); the harness then runs out of its 3 seconds
            {"harness_command": "exec sleep 600", "harness_timeout": "3s"},
            SETUP_THEN_SLEEPING,
            _wait,
            ("failed", "harness_timeout"),
        ),
        ({}, SETUP_COPYING, _wait, ("failed", "setup_failed")),
    ],
    ids=["cancel", "runner_stopped", "harness_timeout", "setup_failed"],
)
def test_every_ending_refuses_the_credential_the_session_copied(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    webhooks_dir: Path,
    overrides: dict[str, Any],
    setup: list[dict[str, Any]] | None,
    end: Callable[[Stack, RunnerService, str], None],
    ended: tuple[str, str | None],
) -> None:
    review = {"setup": setup} if setup is not None else None
    with github_app_stack(redis_url, shared_dir, origin, pr_review=review, **overrides) as stack:
        session_id = stack.deliver("app-pr-ending", webhooks_dir)
        with stack.runner() as service:
            credential = _copied(stack, session_id)
            end(stack, service, session_id)
            session = stack.ended(session_id)
            after = _git_credential(stack, session_id, credential)
    assert (session["status"], (session["failure"] or {}).get("code")) == ended, session
    _refused(after)
