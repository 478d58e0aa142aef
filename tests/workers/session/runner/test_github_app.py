"""A githubApp session end to end: a signed delivery, the runner fetching the pull request's head
over smart HTTP through git-credential-hookspawn and the broker of a real web app, and the auth
preflight refusing a repository the broker no longer covers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookspawn.serve.redis_server import free_port
from tests import loopback
from tests.conftest import running_worker, wait_for
from tests.git_server import GitServer
from tests.github_standin import GitHubStandin
from tests.live_server import live_listeners
from tests.secret_scan import file_haystacks, leaks
from tests.workers.session.runner.conftest import (
    PR_NUMBER,
    Origin,
    dispatched_session,
    git,
    runner_settings,
    running_runner,
    write_agent,
)
from tests.workers.session.runner.test_lifecycle import (
    MOUNT_GITHUB_APP,
    PR_REVIEW_TRIGGER,
    widgets_payload,
)
from workers.runtime import build_runtime
from workers.session.runner.service import RunnerService
from workers.settings import Settings

INSTALLATION = 7
WIDGETS_ID = 101
REPOSITORIES = {WIDGETS_ID: "acme/widgets", 102: "acme/gadgets"}
PR_HEAD_REF = "refs/pull/{{payload.github.pullRequest.number}}/head"


@dataclass
class Stack:
    """hookspawn (web, delivery worker, runner) with a GitHub App on the stand-in, whose
    acme/widgets the smart-HTTP git server serves from `origin`."""

    http: httpx.Client
    github: GitHubStandin
    git: GitServer
    settings: Settings
    #: every installation token the git server was shown and every session credential issued
    secrets: dict[str, str]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, label: str, value: str) -> None:
        with self.lock:
            self.secrets[label] = value

    def deliver(self, delivery: str, webhooks_dir: Path) -> str:
        """POST the signed pull_request.opened for acme/widgets; the session it dispatched."""
        payload: dict[str, Any] = widgets_payload(webhooks_dir)
        payload["installation"]["id"] = INSTALLATION
        payload["repository"]["id"] = WIDGETS_ID
        return dispatched_session(self.http, json.dumps(payload).encode(), delivery)

    def ended(self, session_id: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def done() -> bool:
            seen.update(self.http.get(f"/sessions/{session_id}").json())
            return seen.get("status") in ("succeeded", "failed", "cancelled")

        wait_for(done, timeout=60)
        return seen

    @contextmanager
    def runner(
        self, prepare: Callable[[RunnerService], None] | None = None
    ) -> Iterator[RunnerService]:
        """The runner, each session credential it issues kept for the scan."""
        with running_runner(self.settings, prepare=prepare) as service:
            issue = service.runner.issue_credential
            assert issue is not None

            def kept(session_id: str) -> str | None:
                value = issue(session_id)
                if value is not None:
                    self.keep(f"session credential of {session_id}", value)
                return value

            service.runner.issue_credential = kept
            yield service


@contextmanager
def github_app_stack(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    *,
    pr_review: dict[str, Any] | None = None,
    agents: Callable[[Path], None] | None = None,
    **overrides: Any,
) -> Iterator[Stack]:
    """The stack, its runner not started (`Stack.runner`): HOOKSPAWN_PUBLIC_URL is the admin
    API's address and HOOKSPAWN_BROKER_PUBLIC_URL the broker listener's (hookspawn web's two),
    HOOKSPAWN_GIT_URL_REWRITE maps https://github.com/ to the git server.
    `pr_review`: `write_agent` arguments for the agent the delivery spawns, over the default;
    `agents(agents_dir)` writes more agents; `overrides`: more settings."""
    secrets: dict[str, str] = {}
    lock = threading.Lock()

    with GitHubStandin() as github:

        def permissions_of(repository: str, token: str) -> dict[str, str] | None:
            with lock:
                secrets[f"installation token #{len(secrets)}"] = token
            return github.permissions_on(repository, token)

        with GitServer(origin.root, permissions_of=permissions_of) as server:
            github.add_installation(INSTALLATION, "acme", repositories=dict(REPOSITORIES))
            key = shared_dir / "app.pem"
            key.write_text(github.private_key_pem)
            port, broker_port = free_port(), free_port()
            settings = runner_settings(
                redis_url,
                shared_dir,
                origin,
                git_url_rewrite=[f"https://github.com/={server.url}/"],
                github_app_id=github.app_id,
                github_private_key_path=key,
                github_api_url=github.url,
                public_url=f"http://127.0.0.1:{port}",
                broker_public_url=f"http://127.0.0.1:{broker_port}",
                # session commands run as this process's account unless `overrides` name one
                **{"runner_user": "", **overrides},
            )
            review: dict[str, Any] = {
                "mounts": MOUNT_GITHUB_APP.format(ref=PR_HEAD_REF),
                "setup": [{"name": "deps", "commands": ["cp widget.py ../setup.txt"]}],
                "triggers": PR_REVIEW_TRIGGER,
                **(pr_review or {}),
            }
            write_agent(settings.agents_dir, "pr-review", **review)
            if agents is not None:
                agents(settings.agents_dir)
            rt = build_runtime(settings)
            try:
                with (
                    live_listeners(rt, port, broker_port) as listening,
                    loopback.Client(base_url=listening.admin, timeout=30) as http,
                    running_worker(rt),
                ):
                    synced = http.post("/connections/sync")
                    assert synced.status_code == 200, synced.text
                    yield Stack(http, github, server, settings, secrets, lock)
            finally:
                rt.close()


def test_a_pull_request_delivery_checks_out_its_head_through_the_broker(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    with github_app_stack(redis_url, shared_dir, origin) as stack:
        session_id = stack.deliver("app-pr-2", webhooks_dir)
        with stack.runner():
            session = stack.ended(session_id)
        page = stack.http.get(f"/ui/sessions/{session_id}")
    assert session["status"] == "succeeded", session
    checkout = Path(session["workspace"]) / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.pr_head
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    assert (checkout.parent / "setup.txt").read_text() == "print('a widget')\n"
    log = session["logTail"]
    assert "auth preflight: git ls-remote origin for /workspace/widgets" in log
    assert f"git fetch --depth 1 --no-tags origin refs/pull/{PR_NUMBER}/head" in log
    assert page.status_code == 200
    assert "setup deps" in page.text and "auth preflight" in page.text
    # the fetch went over smart HTTP with an installation token the broker minted for the mount
    assert 200 in stack.git.statuses()
    tokens = [v for k, v in stack.secrets.items() if k.startswith("installation token")]
    granted = [stack.github.token_grant(t) for t in tokens]  # revoked since: see their grant
    read = (INSTALLATION, (WIDGETS_ID,), {"contents": "read", "metadata": "read"})
    assert granted and all(g == read for g in granted), granted
    assert any(k.startswith("session credential") for k in stack.secrets)
    git_audit = [(e["result"], e.get("code")) for e in session["audit"] if e["kind"] == "git"]
    assert git_audit and {result for result, _ in git_audit} == {"allowed"}, session["audit"]
    config = (checkout / ".git" / "config").read_text()
    assert "git-credential-hookspawn" in config and "useHttpPath = true" in config
    files = [p for p in stack.settings.data_dir.rglob("*") if p.is_file()]
    assert checkout / ".git" / "config" in files
    found, scanned = leaks(stack.secrets, file_haystacks(files))
    assert found == []
    assert scanned == len(files)


def _prune(stack: Stack) -> None:
    """The installation stops covering acme/widgets, and hookspawn's connections learn it."""
    stack.github.remove_repository(INSTALLATION, WIDGETS_ID)
    synced = stack.http.post("/connections/sync")
    assert synced.status_code == 200, synced.text


def _suspend(stack: Stack) -> None:
    """The installation is suspended on GitHub; hookspawn learns it when it asks for a token."""
    stack.github.suspend(INSTALLATION)


@pytest.mark.parametrize(
    ("change", "denied"),
    [(_prune, "repository_not_covered"), (_suspend, "repository_access_revoked")],
    ids=["grant-pruned", "installation-suspended"],
)
def test_a_repository_the_broker_no_longer_covers_fails_the_preflight(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    webhooks_dir: Path,
    change: Callable[[Stack], None],
    denied: str,
) -> None:
    with github_app_stack(redis_url, shared_dir, origin) as stack:
        session_id = stack.deliver("app-pr-uncovered", webhooks_dir)
        change(stack)  # before any runner takes the session
        with stack.runner():
            session = stack.ended(session_id)
    assert session["status"] == "failed", session
    failure = session["failure"]
    assert failure["code"] == "git_auth_failed"
    assert failure["message"].startswith("mount /workspace/widgets (acme/widgets): ")
    assert "not found" not in failure["message"].lower()
    assert "covers acme/widgets" in failure["message"]
    git_audit = [(e["result"], e.get("code")) for e in session["audit"] if e["kind"] == "git"]
    assert git_audit and set(git_audit) == {("denied", denied)}, git_audit
    assert 200 not in stack.git.statuses()  # nothing was fetched
    assert not (Path(session["workspace"]) / "workspace" / "widgets" / "README.md").exists()


def test_a_credential_helper_the_session_cannot_run_fails_the_preflight_saying_so(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    """git only says it could not authenticate: the preflight then names the helper."""
    unrunnable = shared_dir / "bin" / "git-credential-hookspawn"
    unrunnable.parent.mkdir()
    unrunnable.write_text("#!/bin/sh\nexit 0\n")
    unrunnable.chmod(0o644)

    def prepare(service: RunnerService) -> None:
        service.runner.helper = str(unrunnable)

    with github_app_stack(redis_url, shared_dir, origin) as stack:
        session_id = stack.deliver("app-pr-no-helper", webhooks_dir)
        with stack.runner(prepare):
            session = stack.ended(session_id)
    assert session["status"] == "failed", session
    failure = session["failure"]
    assert failure["code"] == "git_auth_failed"
    assert failure["message"].startswith(
        f"mount /workspace/widgets (acme/widgets): the runner cannot run the git credential "
        f"helper {unrunnable} (permission denied); set HOOKSPAWN_RUNNER_USER"
    ), failure
    assert "auth preflight: git ls-remote" in session["logTail"]  # git was asked first
    assert 200 not in stack.git.statuses()


def test_a_session_ended_before_a_runner_takes_it_gets_no_credential(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    """`POST /sessions/{id}/end` while it is queued: the runner then issues it no session
    credential, so its githubApp mount fails the auth preflight and nothing is fetched."""
    with github_app_stack(redis_url, shared_dir, origin) as stack:
        session_id = stack.deliver("app-pr-ended", webhooks_dir)
        ended = stack.http.post(f"/sessions/{session_id}/end")
        assert ended.status_code == 200, ended.text
        with stack.runner():
            session = stack.ended(session_id)
    assert session["status"] == "failed", session
    assert session["failure"] == {
        "code": "git_auth_failed",
        "message": "mount /workspace/widgets (acme/widgets): githubApp auth needs the credential "
        "broker, and this session was ended (POST /sessions/{id}/end) before it ran: it gets no "
        "credential",
    }
    assert not any(k.startswith("session credential") for k in stack.secrets), stack.secrets
    assert not any(k.startswith("installation token") for k in stack.secrets), stack.secrets
    assert 200 not in stack.git.statuses()
    assert not (Path(session["workspace"]) / "workspace" / "widgets" / "README.md").exists()
