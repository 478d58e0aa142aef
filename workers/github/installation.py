"""An installation record, what a change to the connections did, and their stored form (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from triggers.timestamps import iso_z, parse_iso

__all__ = [
    "Change",
    "Installation",
    "Selection",
    "State",
    "Status",
    "SyncReport",
    "covered_names",
    "joined",
    "positive_id",
    "repository_map",
    "selection_of",
]

Status = Literal["active", "suspended", "deleted"]
Selection = Literal["all", "selected"]


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
    #: recorded by `hookspawn connections add` (no GitHub installation behind it, for trying):
    #: it covers like any connection, and no token is ever minted for it
    manual: bool = False
    #: recorded by `hookspawn serve --demo` for its example repository, and removed by a
    #: `serve` without --demo
    demo: bool = False

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
            **({"manual": True} if self.manual else {}),
            **({"demo": True} if self.demo else {}),
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
            repository_selection=selection_of(data.get("repositorySelection")),
            repositories=repository_map(data.get("repositories"), name_key="fullName"),
            pruned=repository_map(data.get("pruned"), name_key="fullName"),
            permissions={str(k): str(v) for k, v in dict(data.get("permissions") or {}).items()},
            updated_at=_epoch(data.get("updatedAt")),
            manual=data.get("manual") is True,
            demo=data.get("demo") is True,
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


def positive_id(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number > 0 else None


def repository_map(items: object, *, name_key: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        repo_id = positive_id(item.get("id"))
        name = item.get(name_key)
        if repo_id is not None and isinstance(name, str) and name:
            found[repo_id] = name
    return found


def _repo_list(repos: Mapping[int, str]) -> list[dict[str, Any]]:
    return [{"id": repo_id, "fullName": name} for repo_id, name in sorted(repos.items())]


def _status(value: object) -> Status:
    if value == "suspended" or value == "deleted":
        return value
    return "active"


def selection_of(value: object) -> Selection:
    return "all" if value == "all" else "selected"


def _iso(ts: float) -> str | None:
    if not ts:
        return None
    return iso_z(ts)


def _epoch(value: object) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        return parse_iso(value).timestamp()
    return 0.0


def covered_names(repos: Mapping[int, str]) -> str:
    return joined(sorted(repos.values(), key=str.lower)) if repos else "no repositories yet"


def joined(names: Iterable[str]) -> str:
    return ", ".join(names)
