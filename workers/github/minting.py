"""Asking GitHub for a token, its definitive refusals made values: what was lost is pruned
from the connections, and the refusal says which rule GitHub applied."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TypeVar

from triggers.spawn_rules import Grant, Refusal, refusal
from workers.errors import AccessRevoked, TokenPermissionNotGranted
from workers.github.connections import ConnectionStore

__all__ = ["mint_or_refuse", "prune_refused"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def mint_or_refuse(
    mint: Callable[[], T],
    connections: ConnectionStore,
    grant: Grant,
    *,
    repository: str,
    permissions: Mapping[str, str],
    mount_path: str | None = None,
) -> T | Refusal:
    """`mint()`'s token; GitHub's definitive refusal of it (`repository_access_revoked`, the
    grant pruned first; `permission_not_granted`) as a Refusal. Anything else is raised."""
    where = f"mount {mount_path}: " if mount_path else ""
    at = {"mountPath": mount_path} if mount_path else {}
    try:
        return mint()
    except AccessRevoked as exc:
        prune_refused(connections, exc, grant)
        return refusal(
            "repository_access_revoked",
            f"{where}GitHub refused access to {repository}: {exc.message}",
            **at,
            repository=repository,
            installationId=grant.installation_id,
            kind=exc.kind,
        )
    except TokenPermissionNotGranted as exc:
        return refusal(
            "permission_not_granted",
            f"{where}installation {grant.installation_id} does not grant what is asked on "
            f"{repository}: {exc.message}",
            **at,
            repository=repository,
            permissions=dict(permissions),
        )


def prune_refused(connections: ConnectionStore, exc: AccessRevoked, grant: Grant) -> None:
    """GitHub definitively refused a token for `grant`: take what was lost out of the store."""
    if exc.kind == "installation_deleted":
        connections.mark_deleted(grant.installation_id)
    elif exc.kind == "installation_suspended":
        connections.mark_suspended(grant.installation_id)
    else:
        connections.prune(grant.installation_id, exc.repository_ids or (grant.repository_id,))
    log.warning(
        "pruned after GitHub refused a token (%s): installation %s repository %s",
        exc.kind,
        grant.installation_id,
        grant.repository_id,
    )
