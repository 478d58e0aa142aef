"""Connection state and how each GitHub App lifecycle webhook changes it (pure: no I/O).

An `Installation` is one GitHub App installation the project knows: its status and the
repositories it covers, keyed by repository id so a rename keeps identity. `apply_event` takes
the raw (snake_case) webhook body and changes a `{installation id: Installation}` map in place,
answering what changed. SPEC §7; the payload shapes are GitHub's:
https://docs.github.com/webhooks/webhook-events-and-payloads

Choices the SPEC leaves open (each also said where it is made):

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

import copy
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from workers.errors import WorkerError

__all__ = [
    "LIFECYCLE_EVENTS",
    "Change",
    "Installation",
    "Selection",
    "State",
    "Status",
    "SyncReport",
    "apply_event",
    "mark_status",
    "prune",
    "replace_all",
    "replace_one",
]

Status = Literal["active", "suspended", "deleted"]
Selection = Literal["all", "selected"]

#: the X-GitHub-Event names that can change connections (everything else is a no-op)
LIFECYCLE_EVENTS = frozenset(
    {"installation", "installation_repositories", "repository", "installation_target"}
)


@dataclass
class Installation:
    """One GitHub App installation of the project and the repositories it covers."""

    id: int
    account: str
    status: Status = "active"
    repository_selection: Selection = "selected"
    repositories: dict[int, str] = field(default_factory=dict)  # repo id → current owner/name
    pruned: dict[int, str] = field(default_factory=dict)  # refused by GitHub at token time
    permissions: dict[str, str] = field(default_factory=dict)
    updated_at: float = 0.0

    @property
    def active(self) -> bool:
        return self.status == "active"

    def covers(self, full_name: str) -> int | None:
        """The repository id when this installation is active and lists `full_name`."""
        if not self.active:
            return None
        wanted = full_name.lower()
        for repo_id, name in self.repositories.items():
            if name.lower() == wanted:
                return repo_id
        return None

    def holds(self, repository_id: int) -> bool:
        return repository_id in self.repositories or repository_id in self.pruned

    def add(self, repositories: Mapping[int, str]) -> list[str]:
        """List these repositories (restoring pruned ones); the names newly covered."""
        added = []
        for repo_id, name in repositories.items():
            if self.repositories.get(repo_id) != name:
                added.append(name)
            self.pruned.pop(repo_id, None)
            self.repositories[repo_id] = name
        return added

    def remove(self, repository_ids: Iterable[int]) -> list[str]:
        """Forget these repositories (listed or pruned); the names that were known."""
        removed = []
        for repo_id in repository_ids:
            name = self.repositories.pop(repo_id, None) or self.pruned.pop(repo_id, None)
            if name is not None:
                removed.append(name)
        return removed

    def rename(self, repository_id: int, full_name: str) -> str | None:
        """Give a held repository its new name; the old name when it changed."""
        for held in (self.repositories, self.pruned):
            old = held.get(repository_id)
            if old is not None and old != full_name:
                held[repository_id] = full_name
                return old
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "account": self.account,
            "status": self.status,
            "repositorySelection": self.repository_selection,
            "repositories": _repo_list(self.repositories),
            "pruned": _repo_list(self.pruned),
            "permissions": dict(sorted(self.permissions.items())),
            "updatedAt": _iso(self.updated_at),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Installation:
        """The inverse of `to_json` (the stored form)."""
        return cls(
            id=int(data["id"]),
            account=str(data.get("account") or ""),
            status=_status(data.get("status")),
            repository_selection=_selection(data.get("repositorySelection")),
            repositories=_repo_map(data.get("repositories"), name_key="fullName"),
            pruned=_repo_map(data.get("pruned"), name_key="fullName"),
            permissions={str(k): str(v) for k, v in dict(data.get("permissions") or {}).items()},
            updated_at=_epoch(data.get("updatedAt")),
        )


@dataclass
class Change:
    """What applying one event (or one store operation) did."""

    installations: set[int] = field(default_factory=set)  # ids whose record changed
    summary: list[str] = field(default_factory=list)  # one human line per effect
    resync: set[int] = field(default_factory=set)  # installations that need an API re-sync

    def __bool__(self) -> bool:
        return bool(self.installations or self.resync)

    def to_json(self) -> dict[str, Any]:
        return {
            "installations": sorted(self.installations),
            "summary": list(self.summary),
            "resync": sorted(self.resync),
        }


@dataclass
class SyncReport:
    """What replacing the stored connections with the GitHub API's answer did."""

    installations: int = 0  # installations GitHub listed
    repositories: int = 0  # repositories covered after the sync
    added: list[int] = field(default_factory=list)  # installations the store did not know
    deleted: list[int] = field(default_factory=list)  # known, no longer listed: now deleted
    changed: list[int] = field(default_factory=list)  # every installation whose record changed
    restored: list[str] = field(default_factory=list)  # pruned repositories covering again
    summary: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "installations": self.installations,
            "repositories": self.repositories,
            "added": self.added,
            "deleted": self.deleted,
            "changed": self.changed,
            "restored": self.restored,
            "summary": self.summary,
        }


State = dict[int, Installation]
_Handler = Callable[[State, Mapping[str, Any], str, Change], None]


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
                f"covers {_names(known.repositories)}"
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
        repositories=_repo_map(listed, name_key="full_name"),
    )


def _refresh(installation: Installation, payload: Mapping[str, Any]) -> None:
    """Take account, selection and permissions from an installation object when it has them."""
    login = _login(payload.get("account"))
    if login:
        installation.account = login
    if payload.get("repository_selection") in ("all", "selected"):
        installation.repository_selection = _selection(payload["repository_selection"])
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
        known.repository_selection = _selection(selection)
    added = known.add(_repo_map(body.get("repositories_added"), name_key="full_name"))
    removed = known.remove(_repo_ids(body.get("repositories_removed")))
    change.installations.add(installation_id)
    if added:
        change.summary.append(f"installation {installation_id} now covers {', '.join(added)}")
    if removed:
        change.summary.append(f"installation {installation_id} no longer covers {_list(removed)}")
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
    from_installation = _optional_id(sender.get("id") if isinstance(sender, Mapping) else None)
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
            + (f"; repositories now {_list(renamed)}" if renamed else "")
        )


_HANDLERS: dict[str, _Handler] = {
    "installation": _installation,
    "installation_repositories": _installation_repositories,
    "repository": _repository,
    "installation_target": _installation_target,
}


# operations the store performs outside webhooks ------------------------------------------
def mark_status(state: State, installation_id: int, status: Status, *, now: float) -> Change:
    """GitHub refused a token (404 → deleted, 403 suspended → suspended); unknown ids: no-op."""
    change = Change()
    known = state.get(installation_id)
    if known is None or known.status == status or known.status == "deleted":
        return change
    known.status = status
    known.updated_at = now
    change.installations.add(installation_id)
    change.summary.append(f"installation {installation_id} ({known.account}) marked {status}")
    return change


def prune(
    state: State, installation_id: int, repository_ids: Iterable[int], *, now: float
) -> Change:
    """GitHub said these repositories are not accessible to the installation: stop covering."""
    change = Change()
    known = state.get(installation_id)
    if known is None:
        return change
    pruned = []
    for repo_id in repository_ids:
        name = known.repositories.pop(repo_id, None)
        if name is not None:
            known.pruned[repo_id] = name
            pruned.append(name)
    if pruned:
        known.updated_at = now
        change.installations.add(installation_id)
        change.summary.append(f"installation {installation_id}: pruned {_list(pruned)}")
    return change


def replace_one(
    state: State, installation_id: int, fresh: Installation | None, *, now: float
) -> Change:
    """One installation re-read from the API (None: GitHub no longer lists it)."""
    change = Change()
    known = state.get(installation_id)
    if fresh is None:
        return mark_status(state, installation_id, "deleted", now=now)
    fresh = copy.deepcopy(fresh)  # the caller's object stays as given (the store may retry)
    fresh.updated_at = now
    if known is not None and not fresh.permissions:
        fresh.permissions = dict(known.permissions)
    state[installation_id] = fresh
    if known is None or _differs(known, fresh):
        change.installations.add(installation_id)
        change.summary.append(
            f"installation {installation_id} ({fresh.account}) re-synced: {fresh.status}, "
            f"covers {_names(fresh.repositories)}"
        )
    return change


def replace_all(state: State, fresh: Iterable[Installation], *, now: float) -> SyncReport:
    """The API's installations replace the stored set; the ones it no longer lists: deleted."""
    report = SyncReport()
    seen: set[int] = set()
    for inst in fresh:
        seen.add(inst.id)
        report.installations += 1
        known = state.get(inst.id)
        if known is None:
            report.added.append(inst.id)
        else:
            report.restored += [n for r, n in known.pruned.items() if r in inst.repositories]
        if replace_one(state, inst.id, inst, now=now):
            report.changed.append(inst.id)
    for installation_id, known in sorted(state.items()):
        if installation_id not in seen and known.status != "deleted":
            mark_status(state, installation_id, "deleted", now=now)
            report.deleted.append(installation_id)
            report.changed.append(installation_id)
    report.changed.sort()
    report.added.sort()
    report.repositories = sum(len(i.repositories) for i in state.values() if i.active)
    report.summary = _sync_summary(report)
    return report


def _sync_summary(report: SyncReport) -> list[str]:
    lines = [
        f"{report.installations} installation(s) listed by GitHub, "
        f"{report.repositories} repository(ies) covered"
    ]
    if report.added:
        lines.append(f"new installations: {_list(map(str, report.added))}")
    if report.deleted:
        lines.append(f"no longer listed, marked deleted: {_list(map(str, report.deleted))}")
    if report.restored:
        lines.append(f"pruned repositories restored: {_list(report.restored)}")
    return lines


def _differs(a: Installation, b: Installation) -> bool:
    return (a.account, a.status, a.repository_selection, a.repositories, a.pruned) != (
        b.account,
        b.status,
        b.repository_selection,
        b.repositories,
        b.pruned,
    )


# reading payloads ------------------------------------------------------------------------
def _invalid(message: str, **details: Any) -> WorkerError:
    return WorkerError(f"lifecycle event: {message}", code="invalid_payload", **details)


def _object(body: Mapping[str, Any], key: str, event: str) -> Mapping[str, Any]:
    value = body.get(key)
    if not isinstance(value, Mapping):
        raise _invalid(f"{event} body has no {key!r} object", event=event, field=key)
    return value


def _id(obj: Mapping[str, Any], where: str) -> int:
    value = _optional_id(obj.get("id"))
    if value is None:
        raise _invalid(f"{where} must be a positive integer, got {obj.get('id')!r}", field=where)
    return value


def _optional_id(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number > 0 else None


def _login(account: object) -> str:
    if not isinstance(account, Mapping):
        return ""
    return str(account.get("login") or account.get("slug") or account.get("name") or "")


def _from(changes: Mapping[str, Any], key: str) -> str:
    entry = changes.get(key)
    return str(entry.get("from") or "") if isinstance(entry, Mapping) else ""


def _repo_map(items: object, *, name_key: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        repo_id = _optional_id(item.get("id"))
        name = item.get(name_key)
        if repo_id is not None and isinstance(name, str) and name:
            found[repo_id] = name
    return found


def _repo_ids(items: object) -> list[int]:
    found = []
    for item in items if isinstance(items, list) else ():
        repo_id = _optional_id(item.get("id")) if isinstance(item, Mapping) else None
        if repo_id is not None:
            found.append(repo_id)
    return found


def _repo_list(repos: Mapping[int, str]) -> list[dict[str, Any]]:
    return [{"id": repo_id, "fullName": name} for repo_id, name in sorted(repos.items())]


def _status(value: object) -> Status:
    if value == "suspended" or value == "deleted":
        return value
    return "active"


def _selection(value: object) -> Selection:
    return "all" if value == "all" else "selected"


def _iso(ts: float) -> str | None:
    if not ts:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _epoch(value: object) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0


def _names(repos: Mapping[int, str]) -> str:
    return _list(sorted(repos.values(), key=str.lower)) if repos else "no repositories yet"


def _list(names: Iterable[str]) -> str:
    return ", ".join(names)


def _perms(permissions: Mapping[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(permissions.items())) or "none"
