"""A hookspawn with the broker, a GitHub stand-in, an HTTP dispatch target and a real git server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from hookspawn.web.api import create_app
from tests.conftest import make_settings
from tests.dispatch_target import DispatchTarget, dispatch_target
from tests.git_server import _ISOLATED, GitServer, make_bare_repository
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from tests.workers.delivery.pipeline.conftest import write_agents
from workers.runtime import Runtime, build_runtime

INSTALLATION = 7
REPOS = {101: "acme/widgets", 102: "acme/gadgets", 103: "acme/unmounted"}
PUBLIC_URL = "http://hookspawn.test"
#: where the specs say sessions reach the broker listener (HOOKSPAWN_BROKER_PUBLIC_URL)
BROKER_URL = "http://broker.hookspawn.test"
HELPERS = Path(sys.executable).parent  # where git-credential-hookspawn is installed

_ENV = "harness: claude-code\nenvironment: {name: runtime, image: {kind: preset, name: node24}}\n"


def _agent(name: str, auth: str, extra: str = "", repository: str = "acme/widgets") -> str:
    return (
        f"name: {name}\n{_ENV}{extra}mounts:\n"
        f"  - kind: git\n    repository: {repository}\n    mountPath: /workspace/widgets\n"
        f"    ref: main\n    auth: {auth}\n"
    )


AGENTS = {
    "agents/reader.yaml": _agent("reader", "{kind: githubApp, capabilities: {contents: read}}"),
    "agents/writer.yaml": _agent("writer", "{kind: githubApp}"),
    "agents/workflows.yaml": _agent(
        "workflows", "{kind: githubApp, capabilities: {workflows: write}}"
    ),
    "agents/blind.yaml": _agent("blind", "{kind: githubApp, capabilities: {contents: none}}"),
    "agents/public.yaml": _agent("public", "{kind: none}"),
    "agents/merger.yaml": _agent(
        "merger", "{kind: githubApp, capabilities: {merge: write, secrets: read}}"
    ),
    "agents/narrow.yaml": _agent(
        "narrow",
        "{kind: githubApp}",
        extra="tools:\n  - kind: github\n    allow: [get_file_contents, create_issue]\n",
    ),
    "agents/operator.yaml": _agent(
        "operator", "{kind: githubApp, capabilities: {merge: write, actions: write}}"
    ),
    "agents/stray.yaml": _agent("stray", "{kind: githubApp}", repository="acme/gadgets"),
    # one repository mounted twice: pushes only from /w/rw; pull requests only through /w/ro
    "agents/twice.yaml": (
        f"name: twice\n{_ENV}mounts:\n"
        "  - kind: git\n    repository: acme/widgets\n    mountPath: /w/ro\n    ref: main\n"
        "    auth: {kind: githubApp, capabilities: {contents: read, pullRequests: write}}\n"
        "  - kind: git\n    repository: acme/widgets\n    mountPath: /w/rw\n    ref: main\n"
        "    auth:\n      kind: githubApp\n"
        "      capabilities: {contents: write, pullRequests: none, workflows: write}\n"
    ),
}


@dataclass(frozen=True)
class Session:
    id: str
    credential: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.credential}"}


@dataclass
class BrokerEnv:
    rt: Runtime
    client: httpx.Client
    github: GitHubStandin
    git: GitServer
    target: DispatchTarget
    tmp: Path
    app: FastAPI

    def start(self, agent: str) -> Session:
        response = self.client.post(
            f"/agents/{agent}/sessions", headers={"Idempotency-Key": uuid.uuid4().hex}
        )
        assert response.status_code == 201, response.text
        session_id = response.json()["id"]
        spec = self.target.sessions[session_id]
        return Session(session_id, str((spec.get("broker") or {}).get("credential") or ""))

    def broker_url(self, session: Session) -> str:
        """The broker as the test reaches it: the admin API's port, which serves the broker
        routes too (the spec's URL names HOOKSPAWN_BROKER_PUBLIC_URL)."""
        return f"{str(self.client.base_url).rstrip('/')}/sessions/{session.id}"

    def git_credential(self, session: Session, **body: Any) -> httpx.Response:
        return self.client.post(
            f"/sessions/{session.id}/git-credential", json=body, headers=session.auth
        )

    def tool(self, session: Session, tool: str, repository: str) -> httpx.Response:
        return self.client.post(
            f"/sessions/{session.id}/github-tools/{tool}",
            json={"repository": repository},
            headers=session.auth,
        )

    def run_git(
        self, session: Session, *args: str, cwd: Path | None = None, mount: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The real git, with the hookspawn credential helper and the session's credential
        (the helper naming `mount`, as staging configures it in that mount's checkout)."""
        env = {
            **os.environ,
            **_ISOLATED,
            "PATH": f"{HELPERS}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOOKSPAWN_BROKER_URL": self.broker_url(session),
            "HOOKSPAWN_SESSION_CREDENTIAL": session.credential,
        }
        config = [
            "-c",
            "credential.helper=",
            "-c",
            "credential.helper=hookspawn" + (f" --mount-path={mount}" if mount else ""),
            "-c",
            "credential.useHttpPath=true",
            "-c",
            "user.name=agent",
            "-c",
            "user.email=agent@example.com",
        ]
        return subprocess.run(
            ["git", *config, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )

    def clone(
        self, session: Session, name: str = "clone", mount: str | None = None
    ) -> tuple[subprocess.CompletedProcess[str], Path]:
        """`git clone` of acme/widgets as the session; how it ended, and where it went."""
        dest = self.tmp / f"{name}-{uuid.uuid4().hex[:6]}"
        url = self.git.url_of("acme/widgets")
        done = self.run_git(session, "clone", "-q", url, str(dest), mount=mount)
        return done, dest

    def checkout(self, session: Session, name: str = "clone", mount: str | None = None) -> Path:
        """A clone of acme/widgets as the session, which must succeed."""
        done, dest = self.clone(session, name, mount)
        assert done.returncode == 0, done.stderr
        return dest


@pytest.fixture
def broker_env(redis_url: str, tmp_path: Path) -> Iterator[BrokerEnv]:
    repos = tmp_path / "repos"
    make_bare_repository(repos, "acme/widgets", {"README.md": "widgets\n"})
    auto = write_agents(tmp_path, {k: textwrap.dedent(v) for k, v in AGENTS.items()})
    with (
        GitHubStandin() as github,
        GitServer(repos, permissions_of=github.permissions_on) as git,
        dispatch_target() as target,
    ):
        github.add_installation(INSTALLATION, "acme", repositories=REPOS)
        key = tmp_path / "app.pem"
        key.write_text(github.private_key_pem)
        settings = make_settings(
            redis_url=redis_url,
            data_dir=tmp_path / "data",
            agents_dir=auto,
            github_app_id=github.app_id,
            github_private_key_path=key,
            github_api_url=github.url,
            dispatch_url=target.url,
            public_url=PUBLIC_URL,
            broker_public_url=BROKER_URL,
            git_url_rewrite=[f"https://github.com/={git.url}/"],
        )
        rt = build_runtime(settings)
        try:
            app = create_app(rt)
            with live_client(app) as client:
                synced = client.post("/connections/sync")
                assert synced.status_code == 200, synced.text
                yield BrokerEnv(rt, client, github, git, target, tmp_path, app)
        finally:
            rt.close()
