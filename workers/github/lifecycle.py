"""Connection state and how each GitHub App lifecycle webhook changes it (pure: no I/O).

An `Installation` is one GitHub App installation the project knows: its status and the
repositories it covers, keyed by repository id so a rename keeps identity. `apply_event` takes
the raw (snake_case) webhook body and changes a `{installation id: Installation}` map in place,
answering what changed. The payload shapes are GitHub's:
https://docs.github.com/webhooks/webhook-events-and-payloads

Choices made here (each also said where it is made):

- An installation id is never reused by GitHub, so `deleted` is final for webhooks: a late or
  replayed `created`, `unsuspend` or `installation_repositories` cannot bring it back (only a
  sync that lists it again can). A `deleted` for an id the store never saw is kept as a deleted
  record, for the same reason.
- Every webhook of the App comes from one of its installations, so an `installation` or
  `installation_repositories` event for an unknown id (the `created` one was missed, e.g. the
  service was set up after the App was installed) adds that installation from the payload's
  installation object and marks it for an API re-sync, since the payload lists at most a delta.
- Events carrying only `{"id": …}` for the installation (`repository`, `installation_target`)
  act by repository id and account login on what is known; an unknown installation id there is
  only marked for re-sync.
- `repository` transferred: an installation covers repositories of its own account only. After
  a transfer the repository leaves every installation of another account; on the new owner's
  account it is covered when that installation covers all repositories (or already listed it),
  and not when it covers selected ones. Every installation touched is marked for re-sync.
- A pruned repository (GitHub refused a token for it) stays listed under `pruned`, renamed with
  its installation, and covers nothing until `installation` created, `installation_repositories`
  added, `repository` created/transferred into an all-repositories installation, or a sync lists
  it again. Suspend / unsuspend change the status only, never the repository lists.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from workers.errors import WorkerError
from workers.github.installation import (
    Change,
    Installation,
    State,
    Status,
    covered_names,
    joined,
    positive_id,
    repository_map,
    selection_of,
)

__all__ = ["LIFECYCLE_EVENTS", "apply_event"]

#: the X-GitHub-Event names that can change connections (everything else is a no-op)
LIFECYCLE_EVENTS = frozenset(
    {"installation", "installation_repositories", "repository", "installation_target"}
)


def apply_event(
    state: State, event: str, body: Mapping[str, Any], *, now: float | None = None
) -> Change:
    """Apply one lifecycle webhook (raw body) to `state` in place; non-lifecycle events: no-op."""
    change = Change()
    handler = _HANDLERS.get(event)
    if handler is None:
        return change
    handler(state, body, str(body.get("action") or ""), change)
    stamp = time.time() if now is None else now
    for installation_id in change.installations:
        state[installation_id].updated_at = stamp
    return change


# installation ----------------------------------------------------------------------------
_INSTALLATION_STATUS: dict[str, Status] = {
    "deleted": "deleted",
    "suspend": "suspended",
    "unsuspend": "active",
}


def _installation(state: State, body: Mapping[str, Any], action: str, change: Change) -> None:
    if action not in ("created", "deleted", "suspend", "unsuspend", "new_permissions_accepted"):
        return
    payload = _object(body, "installation", "installation")
    installation_id = _id(payload, "installation.id")
    known = state.get(installation_id)
    if known is not None and known.status == "deleted":
        if action != "deleted":
            change.summary.append(
                f"installation {installation_id}: {action} ignored, the installation was deleted "
                "(GitHub never reuses installation ids)"
            )
        return
    if action == "created" or known is None:
        known = state[installation_id] = _from_payload(installation_id, payload, body, action)
        if action != "deleted" and (action != "created" or "repositories" not in body):
            change.resync.add(installation_id)
        if action == "created":
            change.summary.append(
                f"installation {installation_id} ({known.account}) created: "
                f"covers {covered_names(known.repositories)}"
            )
    _refresh(known, payload)
    change.installations.add(installation_id)
    status = _INSTALLATION_STATUS.get(action)
    if status is not None:
        known.status = status
        change.summary.append(f"installation {installation_id} ({known.account}) is now {status}")
    elif action == "new_permissions_accepted":
        change.summary.append(
            f"installation {installation_id} ({known.account}) permissions now "
            f"{_perms(known.permissions)}"
        )


def _from_payload(
    installation_id: int, payload: Mapping[str, Any], body: Mapping[str, Any], action: str
) -> Installation:
    """A new record from an installation object (and the body's `repositories`, when listed)."""
    listed = body.get("repositories")
    return Installation(
        id=installation_id,
        account=_login(payload.get("account")),
        status="suspended" if payload.get("suspended_at") else "active",
        repositories=repository_map(listed, name_key="full_name"),
    )


def _refresh(installation: Installation, payload: Mapping[str, Any]) -> None:
    """Take account, selection and permissions from an installation object when it has them."""
    login = _login(payload.get("account"))
    if login:
        installation.account = login
    if payload.get("repository_selection") in ("all", "selected"):
        installation.repository_selection = selection_of(payload["repository_selection"])
    permissions = payload.get("permissions")
    if isinstance(permissions, Mapping):
        installation.permissions = {str(k): str(v) for k, v in permissions.items()}


# installation_repositories ---------------------------------------------------------------
def _installation_repositories(
    state: State, body: Mapping[str, Any], action: str, change: Change
) -> None:
    payload = _object(body, "installation", "installation")
    installation_id = _id(payload, "installation.id")
    known = state.get(installation_id)
    if known is not None and known.status == "deleted":
        change.summary.append(
            f"installation {installation_id}: repositories {action} ignored, "
            "the installation was deleted"
        )
        return
    if known is None:
        known = state[installation_id] = Installation(
            id=installation_id, account=_login(payload.get("account"))
        )
        change.resync.add(installation_id)
        change.summary.append(
            f"installation {installation_id} ({known.account}) learnt from "
            f"installation_repositories {action}"
        )
    before = known.repository_selection
    _refresh(known, payload)
    selection = body.get("repository_selection")
    if selection in ("all", "selected"):
        known.repository_selection = selection_of(selection)
    added = known.add(repository_map(body.get("repositories_added"), name_key="full_name"))
    removed = known.remove(_repo_ids(body.get("repositories_removed")))
    change.installations.add(installation_id)
    if added:
        change.summary.append(f"installation {installation_id} now covers {', '.join(added)}")
    if removed:
        change.summary.append(f"installation {installation_id} no longer covers {joined(removed)}")
    if known.repository_selection != before:
        change.resync.add(installation_id)
        change.summary.append(
            f"installation {installation_id} now covers {known.repository_selection} "
            "repositories; re-sync needed"
        )
    elif action == "removed" and not removed:
        # GitHub sends `removed` with an empty list when the selection narrows to `selected`.
        change.resync.add(installation_id)


# repository ------------------------------------------------------------------------------
def _repository(state: State, body: Mapping[str, Any], action: str, change: Change) -> None:
    repo = _object(body, "repository", "repository")
    repo_id = _id(repo, "repository.id")
    full_name = str(repo.get("full_name") or "")
    if not full_name:
        raise _invalid("repository.full_name is missing", event="repository")
    owner = _login(repo.get("owner")) or full_name.partition("/")[0]
    sender = body.get("installation")
    from_installation = positive_id(sender.get("id") if isinstance(sender, Mapping) else None)
    if from_installation is not None and from_installation not in state:
        change.resync.add(from_installation)
    live = [i for i in state.values() if i.status != "deleted"]
    if action == "created":
        for inst in live:
            if _covers_all_of(inst, owner, from_installation):
                inst.add({repo_id: full_name})
                change.installations.add(inst.id)
                change.summary.append(f"installation {inst.id} covers new {full_name}")
    elif action == "renamed":
        _renamed(live, repo_id, full_name, owner, from_installation, change)
    elif action == "deleted":
        for inst in live:
            if inst.remove([repo_id]):
                change.installations.add(inst.id)
                change.summary.append(f"installation {inst.id}: {full_name} deleted")
    elif action == "transferred":
        _transferred(live, repo_id, full_name, owner, change)


def _covers_all_of(inst: Installation, owner: str, from_installation: int | None) -> bool:
    same_account = inst.account.lower() == owner.lower() or inst.id == from_installation
    return same_account and inst.repository_selection == "all"


def _renamed(
    live: list[Installation],
    repo_id: int,
    full_name: str,
    owner: str,
    from_installation: int | None,
    change: Change,
) -> None:
    holders = [i for i in live if i.holds(repo_id)]
    for inst in holders:
        old = inst.rename(repo_id, full_name)
        if old is not None:
            change.installations.add(inst.id)
            change.summary.append(f"installation {inst.id}: {old} renamed to {full_name}")
    if holders:
        return
    # A repository renamed under an all-repositories installation is covered by it even when
    # its `created` event was never seen.
    for inst in live:
        if _covers_all_of(inst, owner, from_installation):
            inst.add({repo_id: full_name})
            change.installations.add(inst.id)
            change.summary.append(f"installation {inst.id} covers {full_name} (renamed)")


def _transferred(
    live: list[Installation], repo_id: int, full_name: str, owner: str, change: Change
) -> None:
    for inst in live:
        held = inst.holds(repo_id)
        if inst.account.lower() != owner.lower():
            if held:
                inst.remove([repo_id])
                change.summary.append(
                    f"installation {inst.id} ({inst.account}) no longer covers {full_name}: "
                    f"transferred to {owner}"
                )
            else:
                continue
        elif inst.repository_selection == "all":
            inst.add({repo_id: full_name})
            change.summary.append(f"installation {inst.id} covers {full_name} (transferred in)")
        elif held:
            inst.rename(repo_id, full_name)
            change.summary.append(f"installation {inst.id}: {full_name} transferred in")
        else:
            change.summary.append(
                f"installation {inst.id} ({inst.account}) covers selected repositories only: "
                f"{full_name} is not covered until it is added"
            )
            continue
        change.installations.add(inst.id)
        change.resync.add(inst.id)


# installation_target ---------------------------------------------------------------------
def _installation_target(
    state: State, body: Mapping[str, Any], action: str, change: Change
) -> None:
    if action != "renamed":
        return
    installation_id = _id(_object(body, "installation", "installation_target"), "installation.id")
    new = _login(body.get("account"))
    changes = body.get("changes")
    changes = changes if isinstance(changes, Mapping) else {}
    old = _from(changes, "login") or _from(changes, "slug")
    targets = [
        i
        for i in state.values()
        if i.status != "deleted"
        and (i.id == installation_id or (old and i.account.lower() == old.lower()))
    ]
    if not targets or not new:
        change.resync.add(installation_id)
        return
    for inst in targets:
        previous = old or inst.account
        inst.account = new
        renamed = []
        for held in (inst.repositories, inst.pruned):
            for repo_id, name in list(held.items()):
                repo_owner, _, repo_name = name.partition("/")
                if repo_owner.lower() == previous.lower():
                    held[repo_id] = f"{new}/{repo_name}"
                    renamed.append(held[repo_id])
        change.installations.add(inst.id)
        change.summary.append(
            f"installation {inst.id}: account {previous} renamed to {new}"
            + (f"; repositories now {joined(renamed)}" if renamed else "")
        )


_Handler = Callable[[State, Mapping[str, Any], str, Change], None]

_HANDLERS: dict[str, _Handler] = {
    "installation": _installation,
    "installation_repositories": _installation_repositories,
    "repository": _repository,
    "installation_target": _installation_target,
}


# reading payloads ------------------------------------------------------------------------
def _invalid(message: str, **details: Any) -> WorkerError:
    return WorkerError(f"lifecycle event: {message}", code="invalid_payload", **details)


def _object(body: Mapping[str, Any], key: str, event: str) -> Mapping[str, Any]:
    value = body.get(key)
    if not isinstance(value, Mapping):
        raise _invalid(f"{event} body has no {key!r} object", event=event, field=key)
    return value


def _id(obj: Mapping[str, Any], where: str) -> int:
    value = positive_id(obj.get("id"))
    if value is None:
        raise _invalid(f"{where} must be a positive integer, got {obj.get('id')!r}", field=where)
    return value


def _login(account: object) -> str:
    if not isinstance(account, Mapping):
        return ""
    return str(account.get("login") or account.get("slug") or account.get("name") or "")


def _from(changes: Mapping[str, Any], key: str) -> str:
    entry = changes.get(key)
    return str(entry.get("from") or "") if isinstance(entry, Mapping) else ""


def _repo_ids(items: object) -> list[int]:
    found = []
    for item in items if isinstance(items, list) else ():
        repo_id = positive_id(item.get("id")) if isinstance(item, Mapping) else None
        if repo_id is not None:
            found.append(repo_id)
    return found


def _perms(permissions: Mapping[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(permissions.items())) or "none"
