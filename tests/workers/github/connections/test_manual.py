"""Manual connections (`connections add|remove`, POST/DELETE /connections): a repository
covered with no GitHub App, for trying agents out; a signed delivery for it is dispatched.

Real HTTP (uvicorn), a real Celery worker, real Redis, the example agents and sample payload."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookspawn.cli import main
from tests.conftest import make_settings, running_worker, wait_for, webhook_headers
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from workers.github.connections import ConnectionStore
from workers.github.installation import Installation
from workers.runtime import Runtime, build_runtime

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples" / ".auto"
PAYLOAD = ROOT / "hookspawn" / "examples" / "payloads" / "pull_request.opened.json"
ADMIN = "admin-secret"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def rt(redis_url: str, tmp_path: Path) -> Iterator[Runtime]:
    runtime = build_runtime(
        make_settings(
            redis_url=redis_url, data_dir=tmp_path / "data", agents_dir=EXAMPLES, admin_token=ADMIN
        )
    )
    yield runtime
    runtime.close()


@pytest.fixture
def web(rt: Runtime) -> Iterator[httpx.Client]:
    with running_worker(rt), live_client(create_app_for(rt)) as client:
        yield client


def create_app_for(rt: Runtime) -> Any:
    from hookspawn.web.api import create_app

    return create_app(rt)


def deliver(web: httpx.Client) -> dict[str, Any]:
    """Post the sample pull_request.opened (acme/widgets), signed; its processed record."""
    body = PAYLOAD.read_bytes()
    delivery = str(uuid.uuid4())
    answer = web.post(
        "/webhooks/github", content=body, headers=webhook_headers(body, "pull_request", delivery)
    )
    assert answer.status_code == 202, answer.text
    found: dict[str, Any] = {}

    def processed() -> bool:
        found.update(web.get(f"/deliveries/{delivery}", headers=AUTH).json())
        return found.get("status") == "processed"

    wait_for(processed, what=lambda: f"delivery processed, found {found}")
    return found


def test_connections_add_then_a_delivery_for_it_is_dispatched(web: httpx.Client) -> None:
    (before,) = deliver(web)["outcomes"]
    assert (before["outcome"], before["code"]) == ("suppressed", "repository_not_covered")
    # the suppression says how to cover the repository
    assert "install the project's GitHub App on it" in before["message"]
    assert "`hookspawn connections add acme/widgets`" in before["message"]

    added = web.post("/connections", json={"repository": "acme/widgets"}, headers=AUTH)
    assert added.status_code == 201, added.text
    (connection,) = added.json()["items"]
    assert connection["manual"] is True
    assert [r["fullName"] for r in connection["repositories"]] == ["acme/widgets"]

    (after,) = deliver(web)["outcomes"]
    assert after["outcome"] == "dispatched", after
    explained = web.post(
        "/explain",
        json={"event": "pull_request", "payload": json.loads(PAYLOAD.read_text())},
        headers=AUTH,
    )
    assert "a manual connection (`hookspawn connections add`): no token" in explained.text
    session = web.get(f"/sessions/{after['sessionId']}", headers=AUTH).json()
    assert session["mounts"][0]["repository"] == "acme/widgets"

    listed = web.get("/connections", headers=AUTH).json()["items"]
    assert [(i["manual"], i["id"]) for i in listed] == [(True, 0)]
    assert (
        '<span class="badge manual">manual</span>' in web.get("/ui/connections", headers=AUTH).text
    )

    removed = web.delete("/connections/acme/widgets", headers=AUTH)
    assert removed.status_code == 200
    assert web.get("/connections", headers=AUTH).json()["items"] == []
    (ended,) = deliver(web)["outcomes"]
    assert ended["outcome"] == "suppressed"
    again = web.delete("/connections/acme/widgets", headers=AUTH)
    assert again.status_code == 404
    assert again.json()["error"]["code"] == "connection_not_found"


def test_the_delivery_installation_id_given_to_add_is_the_one_used(web: httpx.Client) -> None:
    added = web.post(
        "/connections",
        json={"repository": "ACME/Widgets", "installationId": 424242},
        headers=AUTH,
    )
    assert added.status_code == 201
    (outcome,) = deliver(web)["outcomes"]
    assert outcome["outcome"] == "dispatched", outcome
    session = web.get(f"/sessions/{outcome['sessionId']}", headers=AUTH).json()
    assert session["mounts"][0]["installationId"] == 424242


def test_bad_input_changes_nothing(web: httpx.Client, redis_client: Any) -> None:
    store = ConnectionStore(redis_client)
    store.replace_installation(7, Installation(id=7, account="acme", repositories={1: "acme/x"}))
    for body, status, code in (
        ({"repository": "no-slash"}, 422, "invalid_request"),
        ({"repository": "a/b/c"}, 422, "invalid_request"),
        ({"repository": "acme/.."}, 422, "invalid_request"),
        ({"repository": "acme/."}, 422, "invalid_request"),
        ({"repository": "acme/y", "installationId": 7}, 409, "installation_exists"),
        ({"repository": "acme/y", "installationId": -3}, 422, "invalid_request"),
    ):
        answer = web.post("/connections", json=body, headers=AUTH)
        assert answer.status_code == status, body
        assert answer.json()["error"]["code"] == code
    assert [i.id for i in store.all()] == [7]
    assert web.post("/connections", json={"repository": "acme/y"}).status_code == 401


def test_a_sync_leaves_manual_connections_alone(
    redis_url: str, redis_client: Any, tmp_path: Path
) -> None:
    store = ConnectionStore(redis_client)
    store.add_manual("me/mine", None)
    with GitHubStandin(app_id="4242") as gh:
        gh.add_installation(7, "acme", repositories=[(101, "acme/api")])
        from workers.github.client import GitHubApp

        app = GitHubApp(app_id="4242", private_key=gh.private_key_pem, api_url=gh.url)
        from workers.github.connections import sync_from_github

        sync_from_github(store, app)
    by_id = {i.id: i for i in store.all()}
    assert by_id[0].manual and by_id[0].active and by_id[0].covers("me/mine") is not None
    assert by_id[7].covers("acme/api") == 101


def test_the_commands_add_list_and_remove(
    web: httpx.Client, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKSPAWN_ADMIN_TOKEN", ADMIN)
    url = str(web.base_url).rstrip("/")
    assert main(["connections", "add", "me/mine", "--installation", "5", "--url", url]) == 0
    assert "me/mine is covered by a manual connection" in capsys.readouterr().out
    assert main(["connections", "list", "--url", url]) == 0
    listing = capsys.readouterr().out
    assert "active manual" in listing and "me/mine" in listing
    assert main(["connections", "remove", "me/mine", "--url", url]) == 0
    assert "no longer covered" in capsys.readouterr().out
    assert main(["connections", "remove", "me/mine", "--url", url]) == 1
    assert "404 connection_not_found" in capsys.readouterr().err
    assert main(["connections", "add", "nope", "--url", url]) == 2


def test_with_an_app_a_manual_connection_still_mints_nothing(
    redis_url: str, redis_client: Any, tmp_path: Path
) -> None:
    with GitHubStandin(app_id="4242") as gh:
        key = tmp_path / "app.pem"
        key.write_text(gh.private_key_pem)
        runtime = build_runtime(
            make_settings(
                redis_url=redis_url,
                data_dir=tmp_path / "data",
                agents_dir=EXAMPLES,
                admin_token=ADMIN,
                github_app_id="4242",
                github_private_key_path=key,
                github_api_url=gh.url,
            )
        )
        try:
            with running_worker(runtime), live_client(create_app_for(runtime)) as web:
                web.post("/connections", json={"repository": "acme/widgets"}, headers=AUTH)
                (outcome,) = deliver(web)["outcomes"]
        finally:
            runtime.close()
        # GitHub was never asked for a token for an installation it does not have
        assert outcome["outcome"] == "dispatched", outcome
        assert gh.count("access_tokens") == 0
    (manual,) = ConnectionStore(redis_client).all()
    assert manual.manual and manual.active


def test_every_repository_name_the_compiler_accepts_can_be_added(web: httpx.Client) -> None:
    """`acme/.github` (an organisation's profile repository) is a name agents mount."""
    for name in ("acme/.github", "acme/_x", "acme/-x", "acme/..."):
        added = web.post("/connections", json={"repository": name}, headers=AUTH)
        assert added.status_code == 201, (name, added.text)
        covered = [r["fullName"] for i in added.json()["items"] for r in i["repositories"]]
        assert name in covered
        assert web.delete(f"/connections/{name}", headers=AUTH).status_code == 200


def test_an_installation_covering_the_repository_wins_over_a_manual_connection(
    web: httpx.Client,
    redis_client: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An App installation (42, as an `installation created` delivery records it) and then a
    manual connection (0) for the same repository: a manual start uses the installation."""
    store = ConnectionStore(redis_client)
    store.replace_installation(
        42, Installation(id=42, account="acme", repositories={101: "acme/widgets"})
    )
    assert web.post("/connections", json={"repository": "acme/widgets"}, headers=AUTH).is_success
    started = web.post("/agents/nightly-deps/sessions", json={}, headers=AUTH)
    assert started.status_code == 201, started.text
    assert [m["installationId"] for m in started.json()["mounts"]] == [42]

    monkeypatch.setenv("HOOKSPAWN_ADMIN_TOKEN", ADMIN)
    assert main(["connections", "list", "--url", str(web.base_url)]) == 0
    listed = capsys.readouterr().out
    assert (
        "acme/widgets: covered by installation 42 and by manual connection 0; "
        "installation 42 decides"
    ) in listed
