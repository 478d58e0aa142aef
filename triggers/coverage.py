"""Which installation covers a repository, pure, over a snapshot of the connections."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from agents import Mount

__all__ = ["Connection", "Coverage", "delivery_installation_of", "not_covered_message"]


class Connection(Protocol):
    """One GitHub App installation as the connections store keeps it (read only here)."""

    @property
    def id(self) -> int: ...
    @property
    def account(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def active(self) -> bool: ...
    @property
    def repositories(self) -> Mapping[int, str]: ...
    @property
    def pruned(self) -> Mapping[int, str]: ...
    @property
    def permissions(self) -> Mapping[str, str]: ...
    @property
    def manual(self) -> bool: ...
    def covers(self, full_name: str) -> int | None: ...


C = TypeVar("C", bound=Connection)


@dataclass(frozen=True)
class Coverage(Generic[C]):
    """Every installation the project knows (deleted ones too), by id, as read at one moment."""

    connections: Mapping[int, C]

    def covering(self, full_name: str) -> list[tuple[C, int]]:
        """Active installations that cover `full_name` (case-insensitive), with its repo id:
        GitHub App installations first, then manual connections (which apply only where no
        installation covers the repository), each by id."""
        found = []
        for _, inst in sorted(self.connections.items(), key=_precedence):
            repo_id = inst.covers(full_name)
            if repo_id is not None:
                found.append((inst, repo_id))
        return found

    def resolve(
        self, full_name: str, *, pinned: int | None, delivery_installation: int | None
    ) -> tuple[C, int] | None:
        """The installation a mount of `full_name` uses, with the repository id.

        A pinned `auth.installationId` is used only when it is a known active installation
        covering the repository; otherwise there is none (never another installation, never an
        id the project has no connection for). Unpinned: the delivery's installation when it is
        an active connection covering the repository, else the first one `covering` lists: an
        App installation before any manual connection, whatever their ids.
        """
        if pinned is not None:
            return self._covered_by(pinned, full_name)
        if delivery_installation is not None:
            found = self._covered_by(delivery_installation, full_name)
            if found is not None:
                return found
        covering = self.covering(full_name)
        return covering[0] if covering else None

    def resolve_mount(
        self, mount: Mount, delivery_installation: int | None
    ) -> tuple[C, int] | None:
        """The installation (and repository id) a githubApp mount uses, or None."""
        pinned = mount.auth.installation_id
        return self.resolve(
            repository_of(mount),
            pinned=int(pinned) if pinned and pinned.isdigit() else None,
            delivery_installation=delivery_installation,
        )

    def why_not(self, mount: Mount) -> str:
        """What the snapshot knows about a mount's repository, to say why it is not covered."""
        wanted = repository_of(mount).lower()
        pinned = mount.auth.installation_id
        for _, inst in sorted(self.connections.items()):
            if pinned and str(inst.id) != pinned:
                continue
            names = {n.lower() for n in inst.repositories.values()}
            if wanted in names and not inst.active:
                return f": installation {inst.id} ({inst.account}) lists it but is {inst.status}"
            if wanted in {n.lower() for n in inst.pruned.values()}:
                return (
                    f": GitHub refused installation {inst.id} a token for it, so it was pruned "
                    "until a lifecycle event or a sync restores it"
                )
        if pinned and not any(str(i) == pinned for i in self.connections):
            return f": the project has no connection for installation {pinned}"
        return ": no installation of the project lists it"

    def _covered_by(self, installation_id: int, full_name: str) -> tuple[C, int] | None:
        inst = self.connections.get(installation_id)
        repo_id = inst.covers(full_name) if inst is not None else None
        return (inst, repo_id) if inst is not None and repo_id is not None else None


def _precedence(item: tuple[int, Connection]) -> tuple[bool, int]:
    installation_id, connection = item
    return connection.manual, installation_id


def repository_of(mount: Mount) -> str:
    """The owner/name on GitHub a mount checks out."""
    return mount.github_repository or mount.repository


def delivery_installation_of(envelope: Mapping[str, Any] | None) -> int | None:
    """The `installation.id` a delivery came with, if any."""
    if envelope is None:
        return None
    installation = envelope.get("github", {}).get("installation")
    if isinstance(installation, Mapping) and isinstance(installation.get("id"), int):
        return int(installation["id"])
    return None


def not_covered_message(mount: Mount) -> str:
    """Which mount's repository is not covered, and how to cover it."""
    repository = repository_of(mount)
    pinned = mount.auth.installation_id
    message = (
        f"mount {mount.mount_path}: repository {repository} is not covered by an "
        "active GitHub App connection"
    )
    if pinned:
        message += f" (pinned installation {pinned})"
    add = f"hookspawn connections add {repository}" + (
        f" --installation {pinned}" if pinned else ""
    )
    return (
        f"{message}; to cover it, install the project's GitHub App on it (`hookspawn github-app "
        f"create` registers one), or, to try without an App, `{add}`"
    )
