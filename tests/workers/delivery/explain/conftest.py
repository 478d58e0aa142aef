"""A whole hookspawn for explain tests: the pipeline tests' agents plus some with filters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.github_standin import GitHubStandin
from tests.workers.delivery.pipeline.conftest import AGENTS, Hookspawn, connect, start_hookspawn
from tests.workers.delivery.pipeline.conftest import github as github  # the stand-in fixture

EXPLAIN_AGENTS = {
    **AGENTS,
    "agents/drafts.yaml": """
        name: drafts
        imports: [../fragments/environments/runtime.yaml]
        triggers:
          - event: pull_request
            name: drafts-only
            branches: [master]
            filters:
              - {path: github.pullRequest.user.login, equals: Codertocat}
              - {path: github.pullRequest.draft, equals: true}
          - event: pull_request
            name: acme
            repositories: ["acme/*"]
          - event: pull_request
            name: release
            branches: ["release/*"]
          - event: pull_request
            name: closed
            actions: [closed]
    """,
}


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir, files=EXPLAIN_AGENTS)


@pytest.fixture
def connected(hs: Hookspawn) -> Hookspawn:
    connect(hs)
    return hs
