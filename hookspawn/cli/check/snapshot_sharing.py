"""`hookspawn check`'s account of setup snapshots: which agents run the same setup, in which
scope each saves and restores, and which of them share one snapshot."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.model import CompiledAgent, Mount
from triggers.session.snapshot import snapshot_key
from triggers.session.snapshot_scope import PULL_REF, privileges

__all__ = ["SharingGroup", "sharing_groups"]

_TOKEN = re.compile(r"\{\{.*?\}\}")


def _mount(mount: Mount, *, bare: bool = False) -> dict[str, Any]:
    """The mount as a session spec has it; `bare`: without what is not the setup's own (the
    ref and the auth), to see which agents run the same setup."""
    github = mount.auth.kind == "githubApp"
    return {
        "repository": mount.github_repository or mount.repository,
        "url": mount.url,
        "mountPath": mount.mount_path,
        "ref": None if bare else mount.ref,
        "depth": mount.depth,
        "auth": None if bare else mount.auth.kind,
        "capabilities": mount.auth.capabilities.to_json() if github and not bare else None,
    }


@dataclass(frozen=True)
class _ScopedMount:
    """A mount as the snapshot scopes read it from a session spec (`snapshot_scope`)."""

    repository: str
    url: str
    mount_path: str
    ref: str | None
    auth: str
    capabilities: Mapping[str, str] | None
    event_dependent: bool


def _scoped(mount: Mount) -> _ScopedMount:
    github = mount.auth.kind == "githubApp"
    return _ScopedMount(
        repository=mount.github_repository or mount.repository,
        url=mount.url,
        mount_path=mount.mount_path,
        ref=mount.ref,
        auth=mount.auth.kind,
        capabilities=mount.auth.capabilities.to_json() if github else None,
        event_dependent=mount.event_dependent,
    )


def _key(agent: CompiledAgent, *, bare: bool = False) -> str:
    mounts = [_mount(m, bare=bare) for m in agent.mounts]
    return snapshot_key(agent.environment_resource.spec, mounts, agent.working_directory)


def _scope(agent: CompiledAgent) -> str:
    """Where the agent's sessions save, as far as the agent file says it."""
    branches, pulls, event = [], [], []
    for mount in agent.mounts:
        repository = mount.github_repository or mount.repository
        ref = mount.ref or "HEAD"
        found = PULL_REF.fullmatch(_TOKEN.sub("1", ref))
        if found and mount.event_dependent:
            pulls.append(f"{repository}#N")
        elif found:
            pulls.append(f"{repository}#{found.group(1)}")
        elif mount.event_dependent:
            event.append(f"{repository} at {ref}")
        else:
            branches.append(f"{repository}@{ref}")
    if pulls:
        return f"pull:{', '.join(pulls)} (pull-request code; N: its pull request)"
    if event:
        return (
            f"the ref the event names ({'; '.join(event)}): a branch scope when the event shows "
            "it is a branch of the repository, else its pull request's"
        )
    return f"branch:{', '.join(branches)}" if branches else "unmounted"


def _restores(agent: CompiledAgent, scope: str) -> str:
    env = agent.environment_resource.spec.env
    reasons = privileges([_scoped(m) for m in agent.mounts], [env, agent.env])
    if scope.startswith("branch:") or scope == "unmounted":
        return "saves and restores there"
    base = "its base branch's scope"
    why = f" (privileged: {'; '.join(reasons)})" if reasons else ""
    if scope.startswith("pull:"):
        return (
            f"restores only from {base}{why}"
            if reasons
            else f"restores from there, else from {base}"
        )
    if reasons:
        return (
            f"restores from there when it is a branch; as pull-request code only from {base}{why}"
        )
    return f"restores from there, else (as pull-request code) from {base}"


@dataclass(frozen=True)
class SharingGroup:
    """Agents whose setup is the same (image, steps, setup, mounts' sources and paths, working
    directory): each one's scope, and the sets of them that share one snapshot."""

    agents: tuple[str, ...]
    scopes: dict[str, str]
    restores: dict[str, str]
    shared: tuple[tuple[str, ...], ...]

    def lines(self) -> list[str]:
        out = [f"snapshots: {', '.join(self.agents)} run the same setup"]
        for name in self.agents:
            out.append(f"  {name}: saves into {self.scopes[name]}; {self.restores[name]}")
        for names in self.shared:
            out.append(f"  {' and '.join(names)} share one snapshot in {self.scopes[names[0]]}")
        if not self.shared:
            out.append("  none of them shares a snapshot: their refs or auth differ")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "agents": list(self.agents),
            "scopes": dict(self.scopes),
            "restores": dict(self.restores),
            "shared": [list(names) for names in self.shared],
        }


def sharing_groups(agents: Sequence[CompiledAgent]) -> list[SharingGroup]:
    """The groups of two or more agents with the same setup (agents whose sessions take no
    snapshot, no setup or no working directory, left out)."""
    by_setup: dict[str, list[CompiledAgent]] = {}
    for agent in agents:
        if agent.working_directory and agent.environment_resource.spec.setup:
            by_setup.setdefault(_key(agent, bare=True), []).append(agent)
    groups = []
    for members in by_setup.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda a: a.name)
        scopes = {a.name: _scope(a) for a in members}
        by_key: dict[tuple[str, str], list[str]] = {}
        for agent in members:
            by_key.setdefault((_key(agent), scopes[agent.name]), []).append(agent.name)
        groups.append(
            SharingGroup(
                agents=tuple(a.name for a in members),
                scopes=scopes,
                restores={a.name: _restores(a, scopes[a.name]) for a in members},
                shared=tuple(tuple(n) for n in by_key.values() if len(n) > 1),
            )
        )
    return groups
