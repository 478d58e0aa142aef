"""Sync from the GitHub API (githubkit over real HTTP to the stand-in) into the real Redis store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.github_standin import GitHubStandin
from tests.workers.github.connections.conftest import Payload
from tests.workers.github.connections.test_store import added, seed
from workers.errors import GitHubUnavailable
from workers.github.client import GitHubApp
from workers.github.connections import ConnectionStore, resync_installation, sync_from_github

APP_ID = "4242"


@pytest.fixture
def gh() -> Iterator[GitHubStandin]:
    with GitHubStandin(app_id=APP_ID, max_per_page=2) as standin:  # pagination on every list
        standin.add_installation(
            7,
            "acme",
            repositories=[(101, "acme/api"), (102, "acme/web"), (103, "acme/ops")],
            repository_selection="all",
        )
        standin.add_installation(8, "beta", repositories=[(201, "beta/site")], suspended=True)
        yield standin


@pytest.fixture
def app(gh: GitHubStandin) -> GitHubApp:
    return GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url, timeout=2.0)


def covered_by(store: ConnectionStore, full_name: str) -> list[int]:
    return [installation.id for installation, _ in store.covering(full_name)]


def test_sync_builds_the_store_from_the_api(
    store: ConnectionStore, app: GitHubApp, gh: GitHubStandin
) -> None:
    report = sync_from_github(store, app)
    assert report.installations == 2
    assert report.added == [7, 8]
    assert report.deleted == []
    assert report.repositories == 3
    assert covered_by(store, "acme/ops") == [7]  # on the second page of repositories
    acme = store.get(7)
    assert acme is not None and acme.repository_selection == "all"
    beta = store.get(8)
    assert beta is not None and beta.status == "suspended"
    assert covered_by(store, "beta/site") == []
    # a suspended installation cannot list its repositories: no token is asked for it
    assert [r.path for r in gh.requests_to("access_tokens")] == [
        "/app/installations/7/access_tokens"
    ]
    assert report.to_json()["summary"][0].startswith("2 installation(s)")


def test_installation_no_longer_listed_becomes_deleted(
    store: ConnectionStore, app: GitHubApp
) -> None:
    seed(store, 9, (901, "gone/repo"))
    assert covered_by(store, "gone/repo") == [9]
    report = sync_from_github(store, app)
    assert report.deleted == [9]
    assert 9 in report.changed
    gone = store.get(9)
    assert gone is not None and gone.status == "deleted"
    assert covered_by(store, "gone/repo") == []
    # a second sync finds nothing new to delete
    assert sync_from_github(store, app).deleted == []


def test_sync_restores_a_pruned_repository_and_drops_a_removed_one(
    store: ConnectionStore, app: GitHubApp, gh: GitHubStandin
) -> None:
    sync_from_github(store, app)
    store.prune(7, [101])
    assert covered_by(store, "acme/api") == []
    gh.remove_repository(7, 102)
    report = sync_from_github(store, app)
    assert report.restored == ["acme/api"]
    assert covered_by(store, "acme/api") == [7]
    assert covered_by(store, "acme/web") == []


def test_sync_keeps_permissions_learnt_from_webhooks(
    store: ConnectionStore, app: GitHubApp, payload: Payload
) -> None:
    body = payload("installation/created")
    body["installation"]["id"] = 7
    store.apply_event("installation", body)
    sync_from_github(store, app)
    acme = store.get(7)
    assert acme is not None
    assert acme.permissions["pull_requests"] == "write"
    assert acme.account == "acme"
    assert covered_by(store, "Codertocat/Hello-World") == []


def test_github_failure_changes_nothing(
    store: ConnectionStore, app: GitHubApp, gh: GitHubStandin
) -> None:
    seed(store, 9, (901, "gone/repo"))
    gh.fail_next("installation_repositories", "server_error")
    with pytest.raises(GitHubUnavailable):
        sync_from_github(store, app)
    assert [i.id for i in store.all()] == [9]
    assert covered_by(store, "gone/repo") == [9]


def test_installation_deleted_between_listing_and_its_repositories(
    store: ConnectionStore, app: GitHubApp, gh: GitHubStandin
) -> None:
    seed(store, 7, (101, "acme/api"))
    gh.fail_next("access_tokens", "not_found")
    report = sync_from_github(store, app)
    assert report.deleted == [7]
    assert covered_by(store, "acme/api") == []


class TestResync:
    def test_unknown_installation_is_learnt(self, store: ConnectionStore, app: GitHubApp) -> None:
        change = store.apply_event("installation_repositories", added(7, (101, "acme/api")))
        assert change.resync == {7}
        assert covered_by(store, "acme/web") == []
        resync_installation(store, app, 7)
        assert covered_by(store, "acme/web") == [7]
        acme = store.get(7)
        assert acme is not None and acme.repository_selection == "all"

    def test_installation_gone_from_github_is_marked_deleted(
        self, store: ConnectionStore, app: GitHubApp, gh: GitHubStandin
    ) -> None:
        sync_from_github(store, app)
        gh.delete_installation(7)
        change = resync_installation(store, app, 7)
        assert change.installations == {7}
        assert covered_by(store, "acme/api") == []

    def test_unknown_and_not_listed_adds_nothing(
        self, store: ConnectionStore, app: GitHubApp
    ) -> None:
        assert not resync_installation(store, app, 555)
        assert store.all() == []

    def test_resync_restores_a_pruned_repository(
        self, store: ConnectionStore, app: GitHubApp
    ) -> None:
        sync_from_github(store, app)
        store.prune(7, [103])
        assert covered_by(store, "acme/ops") == []
        resync_installation(store, app, 7)
        assert covered_by(store, "acme/ops") == [7]
