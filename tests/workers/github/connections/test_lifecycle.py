"""Lifecycle webhooks (recorded payloads) → coverage, on the pure state model."""

from __future__ import annotations

from typing import Any

import pytest

from tests.workers.github.connections.conftest import Payload
from workers.errors import WorkerError
from workers.github.connection_sync import mark_status, prune, replace_all
from workers.github.installation import Installation, State
from workers.github.lifecycle import apply_event

# The recorded payloads' ids and names.
CREATED_ID = (
    957387  # installation/created, new_permissions_accepted, installation_repositories/added
)
HELLO = (186853002, "Codertocat/Hello-World")
SPACE = (186853007, "Codertocat/Space")
OCTO_ID = 2  # installation/deleted, installation_repositories/removed
OCTO_HELLO = (1296269, "octocat/Hello-World")
SUSPEND_ID = 16598467  # installation/suspend, unsuspend
REPO_INSTALLATION = 1  # repository/* with-installation payloads
ORG_HELLO = (186853261, "Octocoders/Hello-World")


def inst(
    installation_id: int,
    account: str,
    *repos: tuple[int, str],
    selection: str = "selected",
    status: str = "active",
) -> Installation:
    return Installation(
        id=installation_id,
        account=account,
        status=status,  # type: ignore[arg-type]
        repository_selection=selection,  # type: ignore[arg-type]
        repositories=dict(repos),
    )


def state_of(*installations: Installation) -> State:
    return {i.id: i for i in installations}


def covering(state: State, full_name: str) -> list[int]:
    return sorted(i.id for i in state.values() if i.covers(full_name) is not None)


def target_renamed(installation_id: int, old: str, new: str) -> dict[str, Any]:
    """`installation_target` renamed, shaped as GitHub's schema has it.

    tests/webhooks has no recorded example of this event; the fields follow
    `WebhookInstallationTargetRenamed` of GitHub's REST description (as generated in githubkit):
    the account as it is now, `changes.login.from`, a simple installation `{id, node_id}`.
    """
    return {
        "action": "renamed",
        "account": {"login": new, "id": 21031067, "node_id": "MDQ6VXNlcjIxMDMxMDY3"},
        "changes": {"login": {"from": old}},
        "installation": {
            "id": installation_id,
            "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==",
        },
        "target_type": "Organization",
        "sender": {"login": new, "id": 21031067, "type": "User"},
    }


class TestInstallation:
    def test_created_covers_its_listed_repositories(self, payload: Payload) -> None:
        state: State = {}
        change = apply_event(state, "installation", payload("installation/created"), now=100.0)
        assert change.installations == {CREATED_ID}
        assert change.resync == set()
        created = state[CREATED_ID]
        assert (created.account, created.status, created.repository_selection) == (
            "Codertocat",
            "active",
            "selected",
        )
        assert created.covers("Codertocat/Hello-World") == HELLO[0]
        assert created.covers("codertocat/HELLO-world") == HELLO[0]  # case-insensitive
        assert created.covers("Codertocat/Space") is None
        assert created.permissions["contents"] == "write"
        assert created.updated_at == 100.0
        assert any("created" in line for line in change.summary)

    def test_deleted_stops_coverage_and_is_final(self, payload: Payload) -> None:
        state = state_of(inst(OCTO_ID, "octocat", OCTO_HELLO))
        assert covering(state, OCTO_HELLO[1]) == [OCTO_ID]
        apply_event(state, "installation", payload("installation/deleted"))
        assert state[OCTO_ID].status == "deleted"
        assert covering(state, OCTO_HELLO[1]) == []
        # a late (or replayed) created for the same id does not bring it back
        late = payload("installation/created")
        late["installation"]["id"] = OCTO_ID
        change = apply_event(state, "installation", late)
        assert change.installations == set()
        assert state[OCTO_ID].status == "deleted"
        assert covering(state, "Codertocat/Hello-World") == []

    def test_deleted_for_an_unknown_id_is_kept_as_a_tombstone(self, payload: Payload) -> None:
        state: State = {}
        apply_event(state, "installation", payload("installation/deleted"))
        assert state[OCTO_ID].status == "deleted"
        assert covering(state, OCTO_HELLO[1]) == []
        replayed = payload("installation_repositories/removed")
        replayed["action"], replayed["repositories_added"] = (
            "added",
            [{"id": 5, "full_name": "octocat/x"}],
        )
        apply_event(state, "installation_repositories", replayed)
        assert covering(state, "octocat/x") == []

    def test_suspend_and_unsuspend(self, payload: Payload) -> None:
        repo = (42, "Codertocat/Tools")
        state = state_of(inst(SUSPEND_ID, "Codertocat", repo, selection="all"))
        change = apply_event(state, "installation", payload("installation/suspend"))
        assert change.installations == {SUSPEND_ID}
        assert state[SUSPEND_ID].status == "suspended"
        assert covering(state, repo[1]) == []
        assert state[SUSPEND_ID].repositories == {42: "Codertocat/Tools"}  # kept, not covering
        apply_event(state, "installation", payload("installation/unsuspend"))
        assert state[SUSPEND_ID].status == "active"
        assert covering(state, repo[1]) == [SUSPEND_ID]

    def test_unsuspend_does_not_restore_a_pruned_repository(self, payload: Payload) -> None:
        repo = (42, "Codertocat/Tools")
        state = state_of(inst(SUSPEND_ID, "Codertocat", repo, selection="all"))
        prune(state, SUSPEND_ID, [42], now=1.0)
        apply_event(state, "installation", payload("installation/suspend"))
        apply_event(state, "installation", payload("installation/unsuspend"))
        assert covering(state, repo[1]) == []
        assert state[SUSPEND_ID].pruned == {42: "Codertocat/Tools"}

    def test_suspend_of_an_unknown_installation_is_learnt_and_marked_for_resync(
        self, payload: Payload
    ) -> None:
        state: State = {}
        change = apply_event(state, "installation", payload("installation/suspend"))
        assert state[SUSPEND_ID].status == "suspended"
        assert state[SUSPEND_ID].account == "Codertocat"
        assert change.resync == {SUSPEND_ID}

    def test_new_permissions_accepted_updates_permissions_not_coverage(
        self, payload: Payload
    ) -> None:
        state = state_of(inst(CREATED_ID, "Codertocat", HELLO))
        state[CREATED_ID].permissions = {"metadata": "read"}
        change = apply_event(
            state, "installation", payload("installation/new_permissions_accepted")
        )
        assert change.installations == {CREATED_ID}
        assert state[CREATED_ID].permissions["pull_requests"] == "write"
        assert state[CREATED_ID].repository_selection == "all"
        assert covering(state, HELLO[1]) == [CREATED_ID]
        assert covering(state, SPACE[1]) == []


class TestInstallationRepositories:
    def test_added(self, payload: Payload) -> None:
        state = state_of(inst(CREATED_ID, "Codertocat", HELLO))
        assert covering(state, SPACE[1]) == []
        change = apply_event(
            state, "installation_repositories", payload("installation_repositories/added")
        )
        assert change.installations == {CREATED_ID}
        assert change.resync == set()
        assert covering(state, SPACE[1]) == [CREATED_ID]
        assert covering(state, HELLO[1]) == [CREATED_ID]
        assert covering(state, "Codertocat/Elsewhere") == []

    def test_removed(self, payload: Payload) -> None:
        keep = (77, "octocat/Keep")
        state = state_of(inst(OCTO_ID, "octocat", OCTO_HELLO, keep))
        change = apply_event(
            state, "installation_repositories", payload("installation_repositories/removed")
        )
        assert change.installations == {OCTO_ID}
        assert covering(state, OCTO_HELLO[1]) == []
        assert covering(state, keep[1]) == [OCTO_ID]
        assert change.resync == set()

    def test_selection_narrowed_with_an_empty_removed_list_needs_a_resync(
        self, payload: Payload
    ) -> None:
        state = state_of(inst(OCTO_ID, "octocat", OCTO_HELLO, selection="all"))
        body = payload("installation_repositories/removed")
        body["repositories_removed"] = []
        change = apply_event(state, "installation_repositories", body)
        assert state[OCTO_ID].repository_selection == "selected"
        assert change.resync == {OCTO_ID}

    def test_added_restores_a_pruned_repository(self, payload: Payload) -> None:
        state = state_of(inst(CREATED_ID, "Codertocat", HELLO, SPACE))
        prune(state, CREATED_ID, [SPACE[0]], now=1.0)
        assert covering(state, SPACE[1]) == []
        apply_event(state, "installation_repositories", payload("installation_repositories/added"))
        assert covering(state, SPACE[1]) == [CREATED_ID]
        assert state[CREATED_ID].pruned == {}

    def test_unknown_installation_is_created_active_and_marked_for_resync(
        self, payload: Payload
    ) -> None:
        state: State = {}
        change = apply_event(
            state, "installation_repositories", payload("installation_repositories/added")
        )
        assert state[CREATED_ID].status == "active"
        assert state[CREATED_ID].account == "Codertocat"
        assert covering(state, SPACE[1]) == [CREATED_ID]
        assert covering(state, HELLO[1]) == []  # not in the delta; the resync will tell
        assert change.resync == {CREATED_ID}


class TestRepository:
    def test_created_under_an_all_repositories_installation(self, payload: Payload) -> None:
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", selection="all"))
        change = apply_event(state, "repository", payload("repository/created.with-installation"))
        assert change.installations == {REPO_INSTALLATION}
        assert covering(state, ORG_HELLO[1]) == [REPO_INSTALLATION]

    def test_created_under_a_selected_installation_is_not_covered(self, payload: Payload) -> None:
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", (9, "Octocoders/Other")))
        change = apply_event(state, "repository", payload("repository/created.with-installation"))
        assert change.installations == set()
        assert covering(state, ORG_HELLO[1]) == []

    def test_created_for_an_unknown_installation_adds_nothing(self, payload: Payload) -> None:
        state: State = {}
        change = apply_event(state, "repository", payload("repository/created.with-installation"))
        assert state == {}
        assert change.resync == {REPO_INSTALLATION}

    def test_created_restores_a_pruned_repository(self, payload: Payload) -> None:
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", ORG_HELLO, selection="all"))
        prune(state, REPO_INSTALLATION, [ORG_HELLO[0]], now=1.0)
        apply_event(state, "repository", payload("repository/created.with-installation"))
        assert covering(state, ORG_HELLO[1]) == [REPO_INSTALLATION]

    def test_renamed_keeps_identity(self, payload: Payload) -> None:
        old = (ORG_HELLO[0], "Octocoders/Hello-Old")
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", old))
        body = payload("repository/renamed")
        body["changes"]["repository"]["name"]["from"] = "Hello-Old"  # the sample renames to itself
        change = apply_event(state, "repository", body)
        assert change.installations == {REPO_INSTALLATION}
        assert state[REPO_INSTALLATION].repositories == {ORG_HELLO[0]: ORG_HELLO[1]}
        assert state[REPO_INSTALLATION].covers(ORG_HELLO[1]) == ORG_HELLO[0]
        assert covering(state, old[1]) == []

    def test_renamed_pruned_repository_stays_pruned(self, payload: Payload) -> None:
        old = (ORG_HELLO[0], "Octocoders/Hello-Old")
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", old))
        prune(state, REPO_INSTALLATION, [old[0]], now=1.0)
        apply_event(state, "repository", payload("repository/renamed"))
        assert state[REPO_INSTALLATION].pruned == {ORG_HELLO[0]: ORG_HELLO[1]}
        assert covering(state, ORG_HELLO[1]) == []

    def test_deleted(self, payload: Payload) -> None:
        # No recorded `repository` deleted sample: the body is the same repository object.
        body = payload("repository/renamed")
        body["action"] = "deleted"
        del body["changes"]
        keep = (5, "Octocoders/Keep")
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", ORG_HELLO, keep))
        change = apply_event(state, "repository", body)
        assert change.installations == {REPO_INSTALLATION}
        assert covering(state, ORG_HELLO[1]) == []
        assert covering(state, keep[1]) == [REPO_INSTALLATION]

    def test_transferred_into_an_all_repositories_installation(self, payload: Payload) -> None:
        before = (ORG_HELLO[0], "octocat/Hello-World")
        state = state_of(
            inst(OCTO_ID, "octocat", before),
            inst(REPO_INSTALLATION, "Octocoders", selection="all"),
        )
        change = apply_event(
            state, "repository", payload("repository/transferred.with-installation")
        )
        assert covering(state, before[1]) == []
        assert covering(state, ORG_HELLO[1]) == [REPO_INSTALLATION]
        assert state[OCTO_ID].repositories == {}
        assert change.installations == {OCTO_ID, REPO_INSTALLATION}
        assert change.resync == {OCTO_ID, REPO_INSTALLATION}

    def test_transferred_into_a_selected_installation_is_not_covered(
        self, payload: Payload
    ) -> None:
        before = (ORG_HELLO[0], "octocat/Hello-World")
        state = state_of(
            inst(OCTO_ID, "octocat", before),
            inst(REPO_INSTALLATION, "Octocoders", (9, "Octocoders/Other")),
        )
        apply_event(state, "repository", payload("repository/transferred"))
        assert covering(state, before[1]) == []
        assert covering(state, ORG_HELLO[1]) == []

    def test_other_repository_actions_change_nothing(self, payload: Payload) -> None:
        state = state_of(inst(REPO_INSTALLATION, "Octocoders", ORG_HELLO))
        change = apply_event(state, "repository", payload("repository/edited"))
        assert not change
        assert covering(state, ORG_HELLO[1]) == [REPO_INSTALLATION]


class TestInstallationTarget:
    def test_renamed_account_renames_its_repositories(self) -> None:
        state = state_of(
            inst(REPO_INSTALLATION, "OldCoders", (1, "OldCoders/api"), (2, "oldcoders/web"))
        )
        prune(state, REPO_INSTALLATION, [2], now=1.0)
        change = apply_event(
            state,
            "installation_target",
            target_renamed(REPO_INSTALLATION, "OldCoders", "Octocoders"),
        )
        renamed = state[REPO_INSTALLATION]
        assert change.installations == {REPO_INSTALLATION}
        assert renamed.account == "Octocoders"
        assert renamed.covers("Octocoders/api") == 1
        assert covering(state, "OldCoders/api") == []
        assert renamed.pruned == {2: "Octocoders/web"}

    def test_renamed_unknown_installation_is_marked_for_resync(self) -> None:
        state: State = {}
        change = apply_event(state, "installation_target", target_renamed(99, "a", "b"))
        assert state == {}
        assert change.resync == {99}


class TestEdges:
    def test_non_lifecycle_event_changes_nothing(self, payload: Payload) -> None:
        state = state_of(inst(CREATED_ID, "Codertocat", HELLO))
        change = apply_event(state, "push", {"installation": {"id": CREATED_ID}})
        assert not change
        assert state[CREATED_ID].updated_at == 0.0

    def test_malformed_body_is_a_clear_error_and_changes_nothing(self) -> None:
        state = state_of(inst(CREATED_ID, "Codertocat", HELLO))
        with pytest.raises(WorkerError) as caught:
            apply_event(state, "installation", {"action": "deleted", "installation": {"id": "x"}})
        assert caught.value.code == "invalid_payload"
        assert "installation.id" in caught.value.message
        assert state[CREATED_ID].status == "active"

    def test_to_json_shape_and_round_trip(self) -> None:
        original = inst(7, "acme", (2, "acme/b"), (1, "acme/a"), selection="all")
        original.pruned = {3: "acme/c"}
        original.permissions = {"metadata": "read"}
        original.updated_at = 1_700_000_000.25
        data = original.to_json()
        assert data == {
            "id": 7,
            "account": "acme",
            "status": "active",
            "repositorySelection": "all",
            "repositories": [{"id": 1, "fullName": "acme/a"}, {"id": 2, "fullName": "acme/b"}],
            "pruned": [{"id": 3, "fullName": "acme/c"}],
            "permissions": {"metadata": "read"},
            "updatedAt": "2023-11-14T22:13:20.250000Z",
        }
        assert Installation.from_json(data) == original

    def test_mark_status_on_a_deleted_installation_changes_nothing(self) -> None:
        state = state_of(inst(7, "acme", (1, "acme/a"), status="deleted"))
        assert not mark_status(state, 7, "suspended", now=1.0)
        assert state[7].status == "deleted"

    def test_replace_all_restores_pruned_and_deletes_the_unlisted(self) -> None:
        state = state_of(inst(7, "acme", (1, "acme/a")), inst(8, "gone", (2, "gone/x")))
        prune(state, 7, [1], now=1.0)
        report = replace_all(state, [inst(7, "acme", (1, "acme/a"))], now=2.0)
        assert report.restored == ["acme/a"]
        assert report.deleted == [8]
        assert covering(state, "acme/a") == [7]
        assert covering(state, "gone/x") == []
