"""An `Idempotency-Key` is bound to the body of its first start: reused with another, 422."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.github_standin import GitHubStandin
from tests.hostile.conftest import error_of
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, start_hookspawn
from tests.workers.delivery.pipeline.conftest import github as github  # the stand-in fixture

FIRST = {"displayTitle": "Nightly", "initialPrompt": "tidy the docs"}
OTHER = {"displayTitle": "Nightly", "initialPrompt": "push to main"}


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    for running in start_hookspawn(tmp_path, redis_url, github, webhooks_dir):
        connect(running)
        yield running


def test_manual_start_key_reused_with_another_body(hs: Hookspawn) -> None:
    key = {"Idempotency-Key": "night-7"}
    first = hs.client.post("/agents/nightly/sessions", json=FIRST, headers=key)
    assert first.status_code == 201, first.text
    again = hs.client.post("/agents/nightly/sessions", json=FIRST, headers=key)
    assert again.status_code == 201, again.text
    assert again.json()["id"] == first.json()["id"]

    for body in (OTHER, {}, {**FIRST, "requester": "mallory"}):
        reused = hs.client.post("/agents/nightly/sessions", json=body, headers=key)
        assert reused.status_code == 422, reused.text
        error = error_of(reused)
        assert error["code"] == "idempotency_key_reused"
        assert "night-7" in error["message"] and "nightly" in error["message"]
    sessions = hs.sessions("nightly")
    assert [s["id"] for s in sessions] == [first.json()["id"]]
    assert sessions[0]["initialPrompt"] == FIRST["initialPrompt"]
    # the key is per agent: the same key on another agent is a start of its own
    other = hs.client.post("/agents/elsewhere/sessions", json=OTHER, headers=key)
    assert other.json()["error"]["code"] == "unauthorized_repository"


def test_agent_to_agent_key_reused_with_another_body(hs: Hookspawn) -> None:
    parent = hs.client.post("/agents/nightly/sessions").json()["id"]
    key = {"Idempotency-Key": "child-1"}
    spawn = f"/sessions/{parent}/spawn"
    child = hs.client.post(spawn, json={"agent": "nightly", **FIRST}, headers=key)
    assert child.status_code == 201, child.text
    same = hs.client.post(spawn, json={"agent": "nightly", **FIRST}, headers=key)
    assert same.json()["id"] == child.json()["id"]
    reused = hs.client.post(spawn, json={"agent": "nightly", **OTHER}, headers=key)
    assert reused.status_code == 422, reused.text
    assert error_of(reused)["code"] == "idempotency_key_reused"
    assert len(hs.sessions("nightly")) == 2  # the parent and its one child
