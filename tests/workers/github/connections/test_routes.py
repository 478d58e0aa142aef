"""GET /connections and POST /connections/sync over real HTTP (uvicorn, Redis, GitHub stand-in)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from hookspawn.web.api import create_app
from tests.conftest import make_settings
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from tests.workers.github.connections.conftest import Payload
from workers.github.connections import ConnectionStore
from workers.runtime import build_runtime

ADMIN = "admin-secret"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


def app_for(**settings: Any) -> Iterator[httpx.Client]:
    rt = build_runtime(make_settings(admin_token=ADMIN, **settings))
    app: FastAPI = create_app(rt)
    try:
        with live_client(app) as client:
            yield client
    finally:
        rt.close()


@pytest.fixture
def gh() -> Iterator[GitHubStandin]:
    with GitHubStandin(app_id="4242") as standin:
        standin.add_installation(7, "acme", repositories=[(101, "acme/api"), (102, "acme/web")])
        yield standin


@pytest.fixture
def with_app(redis_url: str, tmp_path: Path, gh: GitHubStandin) -> Iterator[httpx.Client]:
    key = tmp_path / "app.pem"
    key.write_text(gh.private_key_pem, encoding="utf-8")
    yield from app_for(
        redis_url=redis_url,
        data_dir=tmp_path / "data",
        github_app_id="4242",
        github_private_key_path=key,
        github_api_url=gh.url,
    )


@pytest.fixture
def without_app(redis_url: str, tmp_path: Path) -> Iterator[httpx.Client]:
    yield from app_for(redis_url=redis_url, data_dir=tmp_path / "data")


def test_list_connections(
    without_app: httpx.Client, store: ConnectionStore, payload: Payload
) -> None:
    assert without_app.get("/connections", headers=AUTH).json() == {"items": []}
    store.apply_event("installation", payload("installation/created"))
    answer = without_app.get("/connections", headers=AUTH)
    assert answer.status_code == 200
    (item,) = answer.json()["items"]
    assert item["id"] == 957387
    assert item["status"] == "active"
    assert item["repositories"] == [{"id": 186853002, "fullName": "Codertocat/Hello-World"}]
    assert item["pruned"] == []
    assert item["updatedAt"].endswith("Z")


def test_admin_token_is_required(without_app: httpx.Client) -> None:
    for method, path in (("GET", "/connections"), ("POST", "/connections/sync")):
        answer = without_app.request(method, path)
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == "unauthorized"


def test_sync_without_app_credentials_is_400(without_app: httpx.Client) -> None:
    answer = without_app.post("/connections/sync", headers=AUTH)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "github_not_configured"
    assert "HOOKSPAWN_GITHUB_APP_ID" in error["message"]


def test_sync_then_list(with_app: httpx.Client, store: ConnectionStore) -> None:
    answer = with_app.post("/connections/sync", headers=AUTH)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["installations"] == 1
    assert report["added"] == [7]
    assert report["repositories"] == 2
    (item,) = with_app.get("/connections", headers=AUTH).json()["items"]
    assert [r["fullName"] for r in item["repositories"]] == ["acme/api", "acme/web"]
    assert [i.id for i, _ in store.covering("acme/web")] == [7]


def test_sync_when_github_is_down_is_503(
    with_app: httpx.Client, gh: GitHubStandin, store: ConnectionStore
) -> None:
    gh.fail_next("installations", "server_error")
    answer = with_app.post("/connections/sync", headers=AUTH)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "github_unavailable"
    assert store.all() == []
