"""A whole hookspawn for pipeline tests: real Redis, real worker, real HTTP, GitHub stand-in."""

from __future__ import annotations

import copy
import json
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookspawn.web.api import create_app
from tests.conftest import make_settings, running_worker, wait_for, webhook_headers
from tests.dispatch_target import DispatchTarget
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from workers.runtime import Runtime, build_runtime

INSTALLATION = 957387
ACCOUNT = "Codertocat"
REPO_ID = 186853002
REPO = "Codertocat/Hello-World"
OTHER_REPO_ID = 186853007
OTHER_REPO = "Codertocat/Space"

AGENTS = {
    "fragments/environments/runtime.yaml": """
        harness: claude-code
        environment:
          name: runtime
          image: {kind: preset, name: node24}
    """,
    "agents/pr-review.yaml": """
        name: pr-review
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: refs/pull/{{payload.github.pullRequest.number}}/head
            auth:
              kind: githubApp
              capabilities:
                {contents: read, pullRequests: write, issues: write, checks: read, actions: read}
        triggers:
          - event: pull_request
            actions: [opened, synchronize, reopened]
            displayTitle: "Review #{{ github.pullRequest.number }}: {{ github.pullRequest.title }}"
            initialPrompt: "Review {{ github.pullRequest.htmlUrl }}"
    """,
    "agents/head-branch.yaml": """
        name: head-branch
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: refs/heads/{{payload.github.pullRequest.head.ref}}
            auth: {kind: githubApp}
        triggers:
          - event: pull_request
            actions: [opened]
            name: head
    """,
    "agents/merged-by.yaml": """
        name: merged-by
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: refs/heads/{{payload.github.pullRequest.mergedBy.login}}
            auth: {kind: githubApp, capabilities: {contents: read}}
        triggers:
          - event: pull_request
            actions: [opened]
    """,
    "agents/commenter.yaml": """
        name: commenter
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: main
            auth: {kind: githubApp, capabilities: {contents: read}}
        triggers:
          - event: issue_comment
            actions: [created]
            name: comment
            message: "{{ github.comment.body }}"
    """,
    "agents/bot-commenter.yaml": """
        name: bot-commenter
        imports: [../fragments/environments/runtime.yaml]
        triggers:
          - event: issue_comment
            actions: [created]
            repositories: ["Codertocat/*"]
            bots: true
    """,
    "agents/nightly.yaml": """
        name: nightly
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: Codertocat/Hello-World
            mountPath: /workspace/hello
            ref: main
            auth: {kind: githubApp}
    """,
    "agents/elsewhere.yaml": """
        name: elsewhere
        imports: [../fragments/environments/runtime.yaml]
        mounts:
          - kind: git
            repository: acme/not-connected
            mountPath: /workspace/x
            ref: main
            auth: {kind: githubApp}
    """,
}


def write_agents(root: Path, files: dict[str, str]) -> Path:
    auto = root / ".auto"
    for name, text in files.items():
        path = auto / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return auto


def example(webhooks: Path, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((webhooks / name).read_text())
    return loaded


@dataclass
class Hookspawn:
    """One running hookspawn under test."""

    rt: Runtime
    client: httpx.Client
    github: GitHubStandin
    webhooks: Path
    auto: Path
    sent: list[str] = field(default_factory=list)

    def send(self, event: str, body: dict[str, Any], delivery: str | None = None) -> str:
        delivery = delivery or f"d-{uuid.uuid4().hex[:12]}"
        raw = json.dumps(body).encode()
        response = self.client.post(
            "/webhooks/github",
            content=raw,
            headers=webhook_headers(raw, event, delivery),
        )
        assert response.status_code in (200, 202), response.text
        self.sent.append(delivery)
        return delivery

    def processed(self, delivery: str, *, runs: int = 1) -> dict[str, Any]:
        def done() -> bool:
            view = self.client.get(f"/deliveries/{delivery}").json()
            return view.get("status") in ("processed", "failed") and len(view["runs"]) >= runs

        wait_for(done, timeout=40)
        view: dict[str, Any] = self.client.get(f"/deliveries/{delivery}").json()
        return view

    def outcome(self, view: dict[str, Any], agent: str) -> dict[str, Any]:
        found = [o for o in view["outcomes"] if o["agent"] == agent]
        assert len(found) == 1, view["outcomes"]
        first: dict[str, Any] = found[0]
        return first

    def pr(self, **changes: Any) -> dict[str, Any]:
        body = copy.deepcopy(example(self.webhooks, "pull_request/opened.payload.json"))
        body["pull_request"].update(changes)
        return body

    def lifecycle(self, name: str, mutate: Callable[[dict[str, Any]], None]) -> str:
        body = copy.deepcopy(example(self.webhooks, name))
        mutate(body)
        delivery = self.send(name.split("/")[0], body)
        self.processed(delivery)
        return delivery

    def sessions(self, agent: str | None = None) -> list[dict[str, Any]]:
        params = {"agent": agent} if agent else {}
        items: list[dict[str, Any]] = self.client.get("/sessions", params=params).json()["items"]
        return items


def connect(hs: Hookspawn) -> None:
    """Install the App on Codertocat with Hello-World and Space, as a lifecycle webhook does."""

    def mutate(body: dict[str, Any]) -> None:
        body["installation"]["id"] = INSTALLATION
        body["installation"]["account"]["login"] = ACCOUNT
        body["installation"]["repository_selection"] = "selected"
        body["repositories"] = [
            {
                "id": REPO_ID,
                "name": "Hello-World",
                "full_name": REPO,
                "private": False,
                "node_id": "x",
            },
            {
                "id": OTHER_REPO_ID,
                "name": "Space",
                "full_name": OTHER_REPO,
                "private": False,
                "node_id": "y",
            },
        ]

    hs.lifecycle("installation/created.payload.json", mutate)


@pytest.fixture
def github() -> Iterator[GitHubStandin]:
    with GitHubStandin() as standin:
        standin.add_installation(
            INSTALLATION, ACCOUNT, repositories={REPO_ID: REPO, OTHER_REPO_ID: OTHER_REPO}
        )
        yield standin


def start_hookspawn(
    tmp_path: Path,
    redis_url: str,
    github: GitHubStandin,
    webhooks: Path,
    *,
    files: dict[str, str] | None = None,
    **settings: Any,
) -> Iterator[Hookspawn]:
    key = tmp_path / "app.pem"
    key.write_text(github.private_key_pem)
    auto = write_agents(tmp_path, files or AGENTS)
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "data_dir": tmp_path / "data",
        "agents_dir": auto,
        "github_app_id": github.app_id,
        "github_private_key_path": key,
        "github_api_url": github.url,
        "max_retries": 3,
    }
    values.update(settings)
    rt = build_runtime(make_settings(**values))
    with running_worker(rt), live_client(create_app(rt)) as client:
        yield Hookspawn(rt, client, github, webhooks, auto)
    rt.close()


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


@pytest.fixture
def hs_http(
    tmp_path: Path,
    redis_url: str,
    github: GitHubStandin,
    webhooks_dir: Path,
    target: DispatchTarget,
) -> Iterator[Hookspawn]:
    """A hookspawn dispatching over HTTP to `target`."""
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir, dispatch_url=target.url)


@pytest.fixture
def connected(hs: Hookspawn) -> Hookspawn:
    connect(hs)
    return hs
