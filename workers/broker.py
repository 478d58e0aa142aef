"""The credential broker (SPEC §15): git credentials and GitHub tool tokens for a session.

Authenticates the session credential, decides from the stored spec (triggers.session_access),
re-checks coverage at every request and mints through the spawn path's token cache
(workers.token_cache in front of GitHubApp.mint_token). A definitive refusal from GitHub
prunes the store as at spawn. Each decision is audited on the session; tokens go only into
the answer, never into a record or a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from triggers.session_access import (
    AccessRefused,
    find_git_mount,
    git_permissions,
    session_mounts,
    session_tools,
    tool_grant,
)
from triggers.spawn_rules import Grant
from workers import keys
from workers.connections import ConnectionStore
from workers.errors import (
    AccessRevoked,
    BrokerDenied,
    BrokerError,
    BrokerNotFound,
    InvalidCredential,
    PermissionNotGranted,
    WorkerError,
)
from workers.github import MintedToken
from workers.pipeline import prune_refused
from workers.session_audit import SessionAudit
from workers.session_credentials import SessionCredentials
from workers.sessions import SessionStore
from workers.token_cache import TokenCache

__all__ = ["Broker", "GitRequest"]

log = logging.getLogger(__name__)

_ERRORS: dict[int, type[BrokerError]] = {
    401: InvalidCredential,
    403: BrokerDenied,
    404: BrokerNotFound,
}


@dataclass(frozen=True)
class GitRequest:
    """What git asks for: a mount by its path, or the URL (protocol, host, path) it fetches."""

    mount_path: str | None = None
    protocol: str | None = None
    host: str | None = None
    path: str | None = None


class Broker:
    """One per process; every method is sync (the routes run it in a thread)."""

    def __init__(
        self,
        *,
        sessions: SessionStore,
        credentials: SessionCredentials,
        audit: SessionAudit,
        connections: ConnectionStore,
        tokens: TokenCache | None,
        rewrites: list[str] | None = None,
    ) -> None:
        self.sessions = sessions
        self.credentials = credentials
        self.audit = audit
        self.connections = connections
        self.tokens = tokens
        self.rewrites = list(rewrites or ())

    def authenticate(self, session_id: str, credential: str, kind: str) -> dict[str, Any]:
        """The session's spec when `credential` is one of its valid credentials; else 401."""
        if credential and self.credentials.verify(session_id, credential):
            spec = self.sessions.get(session_id)
            if spec is not None:
                return spec
        if self.sessions.client.exists(keys.session(session_id)):
            self.audit.record(session_id, kind, "denied", code="invalid_credential")
        raise InvalidCredential(
            f"session {session_id}: the session credential is missing, wrong, expired or revoked",
            sessionId=session_id,
        )

    # git ------------------------------------------------------------------------------
    def git_credential(
        self, session_id: str, spec: Mapping[str, Any], asked: GitRequest
    ) -> dict[str, Any]:
        """A token for the mount `asked` names (`spec`: the authenticated session's)."""
        fields: dict[str, Any] = {"mountPath": asked.mount_path}
        try:
            mount = find_git_mount(
                session_mounts(spec),
                mount_path=asked.mount_path,
                protocol=asked.protocol,
                host=asked.host,
                path=asked.path,
                rewrites=self.rewrites,
            )
            fields = {"mountPath": mount.mount_path, "repository": mount.repository}
            permissions = git_permissions(mount)
            fields["permissions"] = permissions
            token = self._mint(
                mount.repository, permissions, mount.mount_path, mount.installation_id
            )
        except (AccessRefused, WorkerError) as exc:
            raise self._denied(session_id, "git", exc, fields) from None
        self.audit.record(
            session_id, "git", "allowed", **{**fields, "permissions": token.permissions}
        )
        return {
            "username": "x-access-token",
            "password": token.token,
            "expiresAt": _iso(token),
            "permissions": token.permissions,
        }

    # tools ----------------------------------------------------------------------------
    def tools(self, spec: Mapping[str, Any]) -> list[str]:
        return session_tools(spec)

    def tool_call(
        self, session_id: str, spec: Mapping[str, Any], tool: str, repository: str
    ) -> dict[str, Any]:
        """The gate's decision on one call, with a token scoped to it when allowed."""
        fields: dict[str, Any] = {"tool": tool, "repository": repository}
        try:
            grant = tool_grant(spec, tool, repository)
            fields["permissions"] = grant.permissions
            if grant.mount is not None:
                fields["mountPath"] = grant.mount.mount_path
            if grant.mount is not None:
                token = self._mint(
                    repository,
                    grant.permissions,
                    grant.mount.mount_path,
                    grant.mount.installation_id,
                )
            else:
                token = self._mint(repository, grant.permissions, hint=_any_installation(spec))
        except (AccessRefused, WorkerError) as exc:
            raise self._denied(session_id, "tool", exc, fields) from None
        self.audit.record(
            session_id, "tool", "allowed", **{**fields, "permissions": token.permissions}
        )
        return {
            "allowed": True,
            "permissions": token.permissions,
            "token": token.token,
            "expiresAt": _iso(token),
        }

    # end ------------------------------------------------------------------------------
    def end(self, session_id: str) -> int:
        """Revoke the session's credentials (admin); 404 for an unknown session."""
        if self.sessions.get(session_id) is None:
            raise BrokerNotFound(
                f"no session {session_id!r}", code="session_not_found", sessionId=session_id
            )
        revoked = self.credentials.revoke(session_id)
        self.audit.record(
            session_id,
            "session",
            "denied",
            code="session_ended",
            message=f"session ended: {revoked} credential(s) revoked",
        )
        return revoked

    # minting --------------------------------------------------------------------------
    def _mint(
        self,
        repository: str,
        permissions: Mapping[str, str],
        mount_path: str | None = None,
        pinned: int | None = None,
        *,
        hint: int | None = None,
    ) -> MintedToken:
        """A token for exactly `repository`, coverage re-checked now (SPEC §7 resolution).

        A mount's repository is minted only from the installation its session was spawned with
        (`pinned`, the spec's `installationId`), while that installation still covers it; a
        repository no mount names resolves like an unpinned mount, preferring `hint`.
        """
        where = f"mount {mount_path}: " if mount_path else ""
        resolved = self.connections.resolve(repository, pinned=pinned, delivery_installation=hint)
        if resolved is None:
            raise BrokerDenied(
                f"{where}repository {repository} is not covered by an active GitHub App connection",
                code="repository_not_covered",
                repository=repository,
            )
        if self.tokens is None:
            raise BrokerDenied(
                "no GitHub App credentials are configured: no token can be minted",
                code="github_not_configured",
            )
        installation, repository_id = resolved
        try:
            return self.tokens.get(installation.id, [repository_id], dict(permissions))
        except AccessRevoked as exc:
            prune_refused(self.connections, exc, Grant(installation.id, repository_id))
            raise BrokerDenied(
                f"{where}GitHub refused access to {repository}: {exc.message}",
                code="repository_access_revoked",
                repository=repository,
                installationId=installation.id,
                kind=exc.kind,
            ) from None
        except PermissionNotGranted as exc:
            raise BrokerDenied(
                f"{where}installation {installation.id} does not grant what is asked on "
                f"{repository}: {exc.message}",
                code="permission_not_granted",
                repository=repository,
                permissions=dict(permissions),
            ) from None

    def _denied(
        self, session_id: str, kind: str, exc: AccessRefused | WorkerError, fields: dict[str, Any]
    ) -> WorkerError:
        """Audit a refusal and turn it into the error the API answers."""
        if isinstance(exc, AccessRefused):
            error: WorkerError = _ERRORS[exc.status](exc.message, code=exc.code, **exc.details)
        else:
            error = exc
        self.audit.record(
            session_id, kind, "denied", code=error.code, message=error.message, **fields
        )
        return error


def _any_installation(spec: Mapping[str, Any]) -> int | None:
    """For a repository no mount names: prefer an installation the session's mounts use."""
    for mount in session_mounts(spec):
        if mount.installation_id is not None:
            return mount.installation_id
    return None


def _iso(token: MintedToken) -> str:
    return token.expires_at.isoformat().replace("+00:00", "Z")
