"""The credential broker: git credentials and GitHub tool decisions for a session.

Authenticates the session credential (failures are counted and rate-limited per session, never
audited), decides from the stored spec (triggers.session.access), re-checks coverage at every
request against only the installations the session was spawned with, and mints the session's
own tokens (workers.session.tokens, never the spawn path's shared cache), which are revoked at
GitHub when the session ends. A definitive refusal from GitHub prunes the store as at spawn.
Each decision is audited on the session. A git token goes only into the git credential answer;
a tool call is answered with the decision alone, never a token.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from templating.errors import Error
from triggers.session.access import (
    AccessNotFound,
    AccessRefused,
    ToolGrant,
    find_git_mount,
    git_permissions,
    session_mounts,
    session_tools,
    tool_grant,
)
from triggers.session.spec import SessionSpec
from triggers.session.url_rewrite import parse_rewrites
from triggers.spawn_rules import Grant, Refusal
from triggers.timestamps import iso_z
from workers import keys
from workers.errors import (
    BrokerDenied,
    BrokerError,
    BrokerNotFound,
    InvalidCredential,
    TooManyFailures,
    WorkerError,
)
from workers.github.client import MintedToken
from workers.github.connections import ConnectionStore
from workers.github.installation import Installation
from workers.github.minting import mint_or_refuse
from workers.session.audit import SessionAudit
from workers.session.credentials import SessionCredentials
from workers.session.records import SessionStore
from workers.session.tokens import Revoked, SessionTokens

__all__ = ["Broker", "GitRequest"]

log = logging.getLogger(__name__)


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
        tokens: SessionTokens | None,
        rewrites: list[str] | None = None,
        unmounted: str = "default",
    ) -> None:
        """`unmounted`: what the tool gate grants on a repository no mount of the session
        names (HOOKSPAWN_UNMOUNTED_CAPABILITIES: default, read or none)."""
        self.unmounted = unmounted
        self.sessions = sessions
        self.credentials = credentials
        self.audit = audit
        self.connections = connections
        self.tokens = tokens
        self.rewrites = parse_rewrites(rewrites or ())

    def authenticate(self, session_id: str, credential: str, kind: str) -> SessionSpec:
        """The session's spec, parsed once, when `credential` is one of its valid credentials;
        else InvalidCredential (TooManyFailures past the limit of failed authentications)."""
        if credential and self.credentials.verify(session_id, credential):
            found = self.sessions.get(session_id)
            if found is not None:
                return found.spec
        if self.sessions.exists(session_id):
            retry_after = self.audit.failed_authentication(session_id, kind)
            if retry_after is not None:
                raise TooManyFailures(
                    f"session {session_id}: too many failed authentications lately; "
                    f"try again in {retry_after}s",
                    sessionId=session_id,
                    retryAfter=retry_after,
                )
        raise InvalidCredential(
            f"session {session_id}: the session credential is missing, wrong, expired or revoked",
            sessionId=session_id,
        )

    # git ------------------------------------------------------------------------------
    def git_credential(
        self, session_id: str, spec: SessionSpec, asked: GitRequest
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
                session_id, mount.repository, permissions, mount.mount_path, mount.installation_id
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
    def tools(self, spec: SessionSpec) -> list[str]:
        return session_tools(spec)

    def tool_call(
        self,
        session_id: str,
        spec: SessionSpec,
        tool: str,
        repository: str,
        method: str | None = None,
    ) -> dict[str, Any]:
        """The gate's decision on one call (of one `method`, for a tool taking one): what it
        may do, on which repository, through which installation. Nothing is minted and no
        token is answered."""
        fields: dict[str, Any] = {"tool": tool, "repository": repository}
        if method is not None:
            fields["method"] = method
        try:
            grant, installation, _ = self._tool_decision(spec, tool, repository, fields)
        except (AccessRefused, WorkerError) as exc:
            raise self._denied(session_id, "tool", exc, fields) from None
        self.audit.record(session_id, "tool", "allowed", **fields)
        return {
            "allowed": True,
            "permissions": grant.permissions,
            "repository": repository,
            "installationId": installation.id,
        }

    def tool_token(
        self,
        session_id: str,
        spec: SessionSpec,
        tool: str,
        repository: str,
        method: object = None,
    ) -> MintedToken:
        """A token minted for one allowed tool call alone, scoped to the tool's (or its
        method's) capability on that repository, for hookspawn to make the call itself: never
        to be answered to the session, and revoked by `release` once the call is made."""
        fields: dict[str, Any] = {"tool": tool, "repository": repository}
        if method is not None:
            fields["method"] = method
        try:
            grant, installation, repository_id = self._tool_decision(spec, tool, repository, fields)
            where = grant.mount.mount_path if grant.mount is not None else None
            token = self._session_token(
                session_id,
                installation,
                repository_id,
                repository,
                grant.permissions,
                where,
                per_call=True,
            )
        except (AccessRefused, WorkerError) as exc:
            raise self._denied(session_id, "tool", exc, fields) from None
        self.audit.record(
            session_id, "tool", "allowed", **{**fields, "permissions": token.permissions}
        )
        return token

    def release(self, session_id: str, token: MintedToken) -> None:
        """Revoke a tool call's token at GitHub once the call is made (SessionTokens.release)."""
        if self.tokens is not None:
            self.tokens.release(session_id, token)

    def tool_refused(
        self, session_id: str, tool: str, repository: str | None, refusal: Error
    ) -> None:
        """Audit a tool call refused before the gate ran (an argument that could leave the
        tool's REST path: `invalid_argument`); nothing was minted."""
        self.audit.record(
            session_id,
            "tool",
            "denied",
            code=refusal.code,
            message=refusal.message,
            tool=tool,
            repository=repository,
        )

    def _tool_decision(
        self, spec: SessionSpec, tool: str, repository: str, fields: dict[str, Any]
    ) -> tuple[ToolGrant, Installation, int]:
        """The gate, then coverage: a mounted repository through its mount's installation, any
        other through an installation the session's githubApp mounts were granted at spawn."""
        grant = tool_grant(spec, tool, repository, self.unmounted, fields.get("method"))
        fields["permissions"] = grant.permissions
        if grant.mount is not None:
            fields["mountPath"] = grant.mount.mount_path
            # a repository mounted twice: its mounts' installations, the granting one first
            pinned = [m.installation_id for m in grant.mounts] or [grant.mount.installation_id]
        else:
            pinned = _session_installations(spec)
        where = f"mount {grant.mount.mount_path}: " if grant.mount is not None else ""
        installation, repository_id = self._covered(repository, pinned, where)
        return grant, installation, repository_id

    # end ------------------------------------------------------------------------------
    def end(self, session_id: str, *, by: str = "admin") -> tuple[int, Revoked]:
        """End the session: revoke its credentials, then its GitHub tokens (at GitHub, before
        this returns); BrokerNotFound for an unknown session. `by`: who ended it, for the
        audit."""
        if not self.sessions.exists(session_id):
            raise BrokerNotFound(
                f"no session {session_id!r}", code="session_not_found", sessionId=session_id
            )
        revoked = self.credentials.revoke(session_id)
        tokens = self.tokens.revoke(session_id) if self.tokens is not None else Revoked()
        message = (
            f"session ended by {by}: {revoked} credential(s) revoked, "
            f"{tokens.revoked + tokens.already} GitHub token(s) revoked"
        )
        if tokens.failed:
            message += f", {tokens.failed} could not be revoked (GitHub unreachable)"
        self.audit.record(session_id, "session", "denied", code="session_ended", message=message)
        return revoked, tokens

    def revoke_unrevoked(self, batch: int = 20) -> list[str]:
        """Revoke at GitHub the tokens of sessions whose end was written without their broker
        (a lost runner's sweep, say: keys.SESSIONS_UNREVOKED, listed by the script that ended
        them and their credentials); the sessions taken off that list. A process that cannot
        revoke (no GitHub App) leaves the list alone."""
        if self.tokens is None:
            return []
        popped = cast(
            list[tuple[bytes, float]],
            self.sessions.client.zpopmin(keys.SESSIONS_UNREVOKED, batch),
        )
        done = []
        for raw, _ in popped:
            session_id = raw.decode()
            tokens = self.tokens.revoke(session_id)
            message = (
                "session ended without its broker: "
                f"{tokens.revoked + tokens.already} GitHub token(s) revoked"
            )
            if tokens.failed:
                message += f", {tokens.failed} could not be revoked"
            self.audit.record(
                session_id, "session", "denied", code="session_ended", message=message
            )
            done.append(session_id)
        return done

    # minting --------------------------------------------------------------------------
    def _mint(
        self,
        session_id: str,
        repository: str,
        permissions: Mapping[str, str],
        mount_path: str | None,
        pinned: int | None,
    ) -> MintedToken:
        """The session's own token for exactly `repository`, from the installation its mount
        was spawned with (`pinned`), coverage re-checked now."""
        where = f"mount {mount_path}: " if mount_path else ""
        installation, repository_id = self._covered(repository, [pinned], where)
        return self._session_token(
            session_id, installation, repository_id, repository, permissions, mount_path
        )

    def _covered(
        self, repository: str, installations: list[int | None], where: str
    ) -> tuple[Installation, int]:
        """The first of `installations` that covers `repository` now; never another one."""
        for installation_id in installations:
            if installation_id is None:
                continue
            found = self.connections.resolve(
                repository, pinned=installation_id, delivery_installation=None
            )
            if found is not None:
                return found
        raise BrokerDenied(
            f"{where}repository {repository} is not covered by the GitHub App installation "
            "the session was spawned with",
            code="repository_not_covered",
            repository=repository,
        )

    def _session_token(
        self,
        session_id: str,
        installation: Installation,
        repository_id: int,
        repository: str,
        permissions: Mapping[str, str],
        mount_path: str | None,
        *,
        per_call: bool = False,
    ) -> MintedToken:
        """The session's own token (`per_call`: a fresh one for one tool call, see
        SessionTokens.for_call)."""
        if self.tokens is None:
            raise BrokerDenied(
                "no GitHub App credentials are configured: no token can be minted",
                code="github_not_configured",
            )
        if installation.manual:
            raise BrokerDenied(
                f"{repository} is covered by a manual connection (`hookspawn connections add`), "
                "with no GitHub App installation behind it: no token can be minted",
                code="github_not_configured",
            )
        mint = self.tokens.for_call if per_call else self.tokens.get
        token = mint_or_refuse(
            partial(mint, session_id, installation.id, [repository_id], permissions),
            self.connections,
            Grant(installation.id, repository_id),
            repository=repository,
            permissions=permissions,
            mount_path=mount_path,
        )
        if isinstance(token, Refusal):
            raise BrokerDenied(token.message, code=token.code, **token.details)
        if self.sessions.client.exists(keys.session_ended(session_id)):
            # ended while this token was being minted: it goes with the others, unanswered
            self.tokens.revoke(session_id)
            raise InvalidCredential(
                f"session {session_id} was ended: the session credential is revoked",
                sessionId=session_id,
            )
        return token

    def _denied(
        self, session_id: str, kind: str, exc: AccessRefused | WorkerError, fields: dict[str, Any]
    ) -> WorkerError:
        """Audit a refusal and turn it into the error the API answers."""
        if isinstance(exc, AccessRefused):
            same: type[BrokerError] = (
                BrokerNotFound if isinstance(exc, AccessNotFound) else BrokerDenied
            )
            error: WorkerError = same(exc.message, code=exc.code, **exc.details)
        else:
            error = exc
        self.audit.record(
            session_id, kind, "denied", code=error.code, message=error.message, **fields
        )
        return error


def _session_installations(spec: SessionSpec) -> list[int | None]:
    """The installations the session's githubApp mounts were granted at spawn, in mount order."""
    found: list[int | None] = []
    for mount in session_mounts(spec):
        if mount.github_app and mount.installation_id not in found:
            found.append(mount.installation_id)
    return found


def _iso(token: MintedToken) -> str:
    return iso_z(token.expires_at)
