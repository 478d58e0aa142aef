"""Capabilities a mount leaves to the defaults, made visible: the warning for a `githubApp`
mount that writes only because of a default, and the "(default)" marks `check` and `explain`
print beside such a capability."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from agents.github_tools import union
from agents.model import CAPABILITY_FIELDS, Capabilities, CompiledAgent, Mount
from agents.schema import Sink, join
from agents.source import YMap, YNode

__all__ = [
    "DEFAULT_MARK",
    "capability_lines",
    "marked",
    "marked_levels",
    "permission_mark",
    "warn_default_writes",
]

DEFAULT_MARK = " (default)"
#: token permission name (pull_requests) → authoring key (pullRequests)
_BY_PERMISSION = {permission: key for _, key, permission in CAPABILITY_FIELDS if permission}


def warn_default_writes(
    sink: Sink, auth_node: YNode | None, path: str, capabilities: Capabilities
) -> None:
    """Warn when the mount writes with a capability its file never wrote."""
    levels = capabilities.to_json()
    writes = [key for key in capabilities.defaulted if levels[key] == "write"]
    if not writes or auth_node is None:
        return
    caps_node = auth_node.get("capabilities") if isinstance(auth_node, YMap) else None
    where = caps_node if caps_node is not None else auth_node
    shown = ", ".join(f"{key}: write" for key in writes)
    sink.warning(
        where.loc,
        join(path, "capabilities"),
        f"{shown} only because of the defaults (this mount never writes "
        f"{'it' if len(writes) == 1 else 'them'}): write each capability the agent needs, "
        "read or none where it needs less",
    )


def marked(capabilities: Capabilities) -> str:
    """`contents read, pullRequests write (default), …`: every capability and its level."""
    return marked_levels(capabilities.to_json(), capabilities.defaulted)


def marked_levels(levels: Mapping[str, str], defaulted: Collection[str]) -> str:
    """`marked` from JSON: capability → level, and the keys that come from the defaults."""
    return ", ".join(
        f"{key} {level}{DEFAULT_MARK if key in defaulted else ''}" for key, level in levels.items()
    )


def permission_mark(permission: str, defaulted: Collection[str]) -> str:
    """ " (default)" when the token permission comes from a defaulted capability, else ""."""
    return DEFAULT_MARK if _BY_PERMISSION.get(permission) in defaulted else ""


def capability_lines(agent: CompiledAgent) -> list[str]:
    """One line per mount for `check`: where it lands, its auth, its effective capabilities."""
    lines = []
    for mount in agent.mounts:
        head = f"  {mount.mount_path}: {mount.repository} @ {mount.ref or '-'}"
        if mount.auth.kind != "githubApp":
            lines.append(f"{head} (auth none)")
            continue
        lines.append(f"{head} (githubApp: {marked(mount.auth.capabilities)})")
    return lines + _mounted_twice(agent.mounts)


def _mounted_twice(mounts: Collection[Mount]) -> list[str]:
    """For a repository with more than one `githubApp` mount: git gets each mount's own
    credential (its checkout's helper names the mount), and the GitHub tools on the repository
    the union of the mounts' grants."""
    by_repository: dict[str, list[Mount]] = {}
    for mount in mounts:
        if mount.auth.kind == "githubApp":
            key = (mount.github_repository or mount.repository).lower()
            by_repository.setdefault(key, []).append(mount)
    lines = []
    for same in by_repository.values():
        if len(same) < 2:
            continue
        paths = ", ".join(m.mount_path for m in same)
        levels = union(m.auth.capabilities for m in same).to_json()
        granted = ", ".join(f"{key} {level}" for key, level in levels.items())
        lines.append(
            f"  {same[0].repository} is mounted at {paths}: git in each checkout gets that "
            f"mount's own credential; GitHub tools on it get the union of their grants "
            f"({granted})"
        )
    return lines
