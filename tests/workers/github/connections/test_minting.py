"""mint_or_refuse: the one mapping of GitHub's definitive token refusals (spawn and broker)."""

from __future__ import annotations

import pytest

from tests.workers.github.connections.test_store import ACME, seed
from triggers.spawn_rules import Grant, Refusal
from workers.errors import AccessRevoked, GitHubUnavailable, TokenPermissionNotGranted
from workers.github.connections import ConnectionStore
from workers.github.minting import mint_or_refuse

PERMISSIONS = {"contents": "write", "metadata": "read"}


def _raise(exc: Exception) -> str:
    raise exc


def _refused(store: ConnectionStore, exc: Exception, mount_path: str | None = None) -> Refusal:
    """mint_or_refuse for acme/widgets (repository 1 of ACME) when minting raises `exc`."""
    refused = mint_or_refuse(
        lambda: _raise(exc),
        store,
        Grant(ACME, 1),
        repository="acme/widgets",
        permissions=PERMISSIONS,
        mount_path=mount_path,
    )
    assert isinstance(refused, Refusal)
    return refused


def test_a_minted_token_is_answered_and_nothing_is_pruned(store: ConnectionStore) -> None:
    seed(store, ACME, (1, "acme/widgets"))
    token = mint_or_refuse(
        lambda: "tok", store, Grant(ACME, 1), repository="acme/widgets", permissions=PERMISSIONS
    )
    assert token == "tok"
    found = store.get(ACME)
    assert found is not None and found.covers("acme/widgets") == 1


def test_a_revoked_repository_is_pruned_and_refused(store: ConnectionStore) -> None:
    seed(store, ACME, (1, "acme/widgets"), (2, "acme/gadgets"))
    revoked = AccessRevoked("gone", kind="repository_inaccessible", installation_id=ACME)
    refused = _refused(store, revoked, "/workspace/widgets")
    assert refused.code == "repository_access_revoked"
    assert refused.message == (
        "mount /workspace/widgets: GitHub refused access to acme/widgets: gone"
    )
    assert refused.details == {
        "mountPath": "/workspace/widgets",
        "repository": "acme/widgets",
        "installationId": ACME,
        "kind": "repository_inaccessible",
    }
    found = store.get(ACME)
    assert found is not None
    assert found.covers("acme/widgets") is None and found.covers("acme/gadgets") == 2


def test_a_suspended_installation_is_marked(store: ConnectionStore) -> None:
    seed(store, ACME, (1, "acme/widgets"))
    suspended = AccessRevoked("suspended", kind="installation_suspended", installation_id=ACME)
    refused = _refused(store, suspended)
    assert refused.code == "repository_access_revoked"
    assert "mountPath" not in refused.details
    found = store.get(ACME)
    assert found is not None and found.status == "suspended"


def test_a_permission_refusal_prunes_nothing(store: ConnectionStore) -> None:
    seed(store, ACME, (1, "acme/widgets"))
    refused = _refused(store, TokenPermissionNotGranted("contents: write is not granted"))
    assert (refused.code, refused.details["permissions"]) == ("permission_not_granted", PERMISSIONS)
    assert refused.message.startswith(f"installation {ACME} does not grant what is asked on ")
    found = store.get(ACME)
    assert found is not None and found.covers("acme/widgets") == 1


def test_anything_else_is_raised(store: ConnectionStore) -> None:
    with pytest.raises(GitHubUnavailable):
        _refused(store, GitHubUnavailable("down"))
