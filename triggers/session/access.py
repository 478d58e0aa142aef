"""What a session may get from the broker, decided from its stored spec alone (pure, no I/O).

The git credential: which mount a request names (by mountPath, or by the URL git asks about)
and its git-wire permissions. The GitHub tools: session-level visibility and the per-call gate
against the target repository's own mount (agents.github_tools holds the table).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agents.github_tools import (
    TOOLS,
    MethodRefused,
    ToolNeed,
    capabilities_from_json,
    grants,
    method_need,
    tool_token_permissions,
    union,
    unmounted_capabilities,
    visible_tools,
)
from agents.model import Capabilities
from triggers.errors import TriggersError
from triggers.session.spec import SessionSpec
from triggers.session.url_rewrite import Rewrite, rewritten

__all__ = [
    "AccessDenied",
    "AccessNotFound",
    "AccessRefused",
    "SessionMountView",
    "ToolGrant",
    "allowlist",
    "find_git_mount",
    "git_permissions",
    "session_mounts",
    "session_tools",
    "tool_grant",
]


class AccessRefused(TriggersError):
    """A broker refusal decided from the spec alone; `code` names the rule that refused."""


class AccessDenied(AccessRefused):
    """The session may not have what it asks (`no_git_credential`, `tool_not_granted`)."""


class AccessNotFound(AccessRefused):
    """What the session asks for does not exist (`mount_not_found`, `unknown_tool`)."""


@dataclass(frozen=True)
class SessionMountView:
    """One mount of a stored session spec."""

    repository: str
    url: str
    mount_path: str
    github_app: bool
    capabilities: Capabilities
    installation_id: int | None
    #: the scope of the mount's git credential, as the spec was spawned with (None: none)
    git_permissions: dict[str, str] | None = None

    @property
    def key(self) -> str:
        return self.repository.lower()


def session_mounts(spec: SessionSpec) -> list[SessionMountView]:
    return [
        SessionMountView(
            repository=mount.repository,
            url=mount.url,
            mount_path=mount.mount_path,
            github_app=mount.auth == "githubApp",
            capabilities=capabilities_from_json(mount.capabilities),
            installation_id=mount.installation_id,
            git_permissions=mount.git_permissions,
        )
        for mount in spec.mounts
    ]


def allowlist(spec: SessionSpec) -> list[str] | None:
    """The agent's `tools` allowlist for the github tool (None: no list, nothing narrowed)."""
    names: list[str] | None = None
    for tool in spec.tools:
        if isinstance(tool, Mapping) and tool.get("kind") == "github" and "allow" in tool:
            names = (names or []) + [str(n) for n in tool.get("allow") or ()]
    return names


# git ------------------------------------------------------------------------------------


def _normal(url: str) -> str:
    """An http(s) URL compared the way git's credential request names it."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return ""
    host, _, path = rest.partition("/")
    path = path.strip("/").removesuffix(".git").lower()
    return f"{scheme.lower()}://{host.lower()}/{path}"


def find_git_mount(
    mounts: Sequence[SessionMountView],
    *,
    mount_path: str | None,
    protocol: str | None,
    host: str | None,
    path: str | None,
    rewrites: Sequence[Rewrite] = (),
) -> SessionMountView:
    """The mount a git credential request names; `mount_not_found` when none does.

    By mountPath first (what tells apart two mounts of one repository: the helper of each
    checkout sends its own), and then the URL git asks about, when it names one, must be the
    mount's; by URL alone, the first mount fetched from it. The host must be the one the
    mount is fetched from (after the deployment's URL rewrites), so a token is never handed
    to git for another server.
    """
    asked = _normal(f"{protocol or 'https'}://{host}/{path}") if host and path else None
    if mount_path is not None:
        wanted = mount_path.rstrip("/") or "/"
        for mount in mounts:
            if (mount.mount_path.rstrip("/") or "/") != wanted:
                continue
            if asked is not None and not _fetched_from(mount, asked, rewrites):
                raise AccessNotFound(
                    f"mount {mount.mount_path} is not fetched from "
                    f"{protocol or 'https'}://{host}/{path}: no credential for another address",
                    code="mount_not_found",
                    mountPath=mount_path,
                    host=host,
                    path=path,
                )
            return mount
        raise AccessNotFound(
            f"the session has no mount at {mount_path}",
            code="mount_not_found",
            mountPath=mount_path,
        )
    if asked is None:
        raise AccessNotFound(
            "name the mount by mountPath, or by host and path (git's credential.useHttpPath)",
            code="mount_not_found",
        )
    for mount in mounts:
        if _fetched_from(mount, asked, rewrites):
            return mount
    raise AccessNotFound(
        f"no mount of the session is fetched from {protocol or 'https'}://{host}/{path}",
        code="mount_not_found",
        host=host,
        path=path,
    )


def _fetched_from(mount: SessionMountView, asked: str, rewrites: Sequence[Rewrite]) -> bool:
    return asked in {_normal(mount.url), _normal(rewritten(mount.url, rewrites))}


def git_permissions(mount: SessionMountView) -> dict[str, str]:
    """The git credential scope of a mount, as its spec was spawned with (its
    `gitPermissions`); `no_git_credential` when none."""
    if not mount.github_app:
        raise AccessDenied(
            f"mount {mount.mount_path} has auth kind none: it gets no git credential",
            code="no_git_credential",
            mountPath=mount.mount_path,
            repository=mount.repository,
        )
    scope = mount.git_permissions
    if scope is None:
        raise AccessDenied(
            f"mount {mount.mount_path} grants contents: none: it gets no git credential",
            code="no_git_credential",
            mountPath=mount.mount_path,
            repository=mount.repository,
        )
    return scope


# tools ----------------------------------------------------------------------------------


def session_tools(spec: SessionSpec) -> list[str]:
    """The tools the session may see: some githubApp mount grants each (then the allowlist)."""
    granted = [m.capabilities for m in session_mounts(spec) if m.github_app]
    return visible_tools(granted, allowlist(spec)) if granted else []


@dataclass(frozen=True)
class ToolGrant:
    """A tool call the gate allows (coverage is still checked by the caller)."""

    need: ToolNeed
    permissions: dict[str, str]
    mount: SessionMountView | None  # None: a repository no mount names (the unmounted grant)
    #: every githubApp mount of the repository, `mount` first: their grants were united
    mounts: tuple[SessionMountView, ...] = ()


def tool_grant(
    spec: SessionSpec,
    tool: str,
    repository: str,
    unmounted: str = "default",
    method: object = None,
) -> ToolGrant:
    """The per-call gate: `unknown_tool` (not found); `tool_not_granted` (denied).

    Visible to the session first, then re-checked against the target repository's own mount.
    A repository no mount names gets what `unmounted` (HOOKSPAWN_UNMOUNTED_CAPABILITIES)
    grants: `default`, the default capabilities with merge and secrets denied; `read`, each
    capability at most read; `none`, no tool at all. A repository mounted more than once is
    granted the union of its `githubApp` mounts' capabilities (each is the session's on that
    repository already); its mounts without GitHub App auth grant nothing. A tool taking a
    `method` is re-checked with that method's need (agents.github_tools.METHODS); without one,
    with the tool's own.
    """
    visible = TOOLS.get(tool)
    if visible is None:
        raise AccessNotFound(f"no GitHub tool is named {tool!r}", code="unknown_tool", tool=tool)
    need = visible
    if tool not in session_tools(spec):
        raise AccessDenied(
            f"{tool} needs {visible.text} on some githubApp mount (and the agent's tools "
            "allowlist, when it has one): the session does not see it",
            code="tool_not_granted",
            tool=tool,
            repository=repository,
        )
    try:
        need = visible if method is None else method_need(tool, method)
    except MethodRefused as exc:
        details = {**exc.details, "tool": tool, "repository": repository}
        raise AccessDenied(exc.message, code=exc.code, **details) from None
    own = [m for m in session_mounts(spec) if m.key == repository.lower()]
    apps = [m for m in own if m.github_app]
    if own:
        capabilities = union(m.capabilities for m in apps)
    else:
        unmounted_grant = unmounted_capabilities(unmounted)
        if unmounted_grant is None:
            raise AccessDenied(
                f"{tool} on {repository}: no mount of the session names {repository}, and "
                "HOOKSPAWN_UNMOUNTED_CAPABILITIES=none grants no tool on an unmounted repository",
                code="tool_not_granted",
                tool=tool,
                repository=repository,
            )
        capabilities = unmounted_grant
    # the mount named in the audit: one whose own grant covers the tool, else the first
    granting = [m for m in apps if grants(m.capabilities, need)]
    mount = (granting or own)[0] if own else None
    if not grants(capabilities, need):
        if mount is None:
            where = (
                "HOOKSPAWN_UNMOUNTED_CAPABILITIES="
                f"{unmounted} (what a repository no mount names gets)"
            )
        elif len(own) > 1:
            where = "its mounts " + ", ".join(m.mount_path for m in own) + " together"
        else:
            where = f"its mount {mount.mount_path}"
        raise AccessDenied(
            f"{tool} on {repository} needs {need.text}, which {where} does not grant",
            code="tool_not_granted",
            tool=tool,
            repository=repository,
        )
    ordered = tuple(granting[:1] + [m for m in apps if m not in granting[:1]])
    return ToolGrant(need, tool_token_permissions(need, capabilities), mount, ordered)
