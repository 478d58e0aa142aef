"""Manual connections (`hookspawn connections add`, `POST /connections`): a repository covered
with no GitHub App installation behind it, for trying agents out (pure rules over the state).

A manual connection covers its repositories exactly as one a lifecycle webhook recorded: spawns
proceed, but no token is ever minted for it. Without `--installation` it is recorded under
installation id 0 (no delivery carries that id); its repositories get stand-in ids (9e12 plus a
hash of the name, far above GitHub's), since nothing told hookspawn their real ones.
"""

from __future__ import annotations

import zlib

from agents.mounts import NAME, OWNER, bare_repository
from workers.errors import WorkerError
from workers.github.installation import Change, Installation, State

__all__ = [
    "MANUAL_INSTALLATION_ID",
    "NAME_PATTERN",
    "OWNER_PATTERN",
    "REPOSITORY_PATTERN",
    "ConnectionConflict",
    "ConnectionNotFound",
    "add_manual",
    "remove_manual",
    "repository_name",
]

#: the installation id of manual connections added without `--installation`
MANUAL_INSTALLATION_ID = 0
#: OWNER/NAME as the agent compiler reads a mount's repository (`acme/.github` included);
#: `repository_name` also refuses a name that is `.` or `..`, as the compiler does
OWNER_PATTERN = rf"^{OWNER}$"
NAME_PATTERN = rf"^{NAME}$"
REPOSITORY_PATTERN = rf"^{OWNER}/{NAME}$"


class ConnectionConflict(WorkerError):
    """`--installation` names an installation GitHub's webhooks or a sync recorded."""

    code = "installation_exists"


class ConnectionNotFound(WorkerError):
    """No manual connection covers the repository to remove."""

    code = "connection_not_found"


def repository_name(value: object) -> str:
    """`value` when it is an OWNER/NAME GitHub could have; WorkerError invalid_repository."""
    if isinstance(value, str) and bare_repository(value):
        return value
    raise WorkerError(
        f"repository: {value!r} is not OWNER/NAME (e.g. octocat/hello-world)",
        code="invalid_repository",
        where="repository",
    )


#: where the stand-in repository ids of manual connections start
_STAND_IN_BASE = 9_000_000_000_000


def _stand_in_id(full_name: str) -> int:
    return _STAND_IN_BASE + zlib.crc32(full_name.lower().encode())


def add_manual(state: State, full_name: str, installation_id: int | None, *, now: float) -> Change:
    """Cover `full_name` by a manual connection (under `installation_id`, else id 0)."""
    full_name = repository_name(full_name)
    iid = MANUAL_INSTALLATION_ID if installation_id is None else installation_id
    if iid < 0:
        raise WorkerError(
            f"installation: {iid} is not an installation id (a positive number)",
            code="invalid_installation",
            where="installation",
        )
    change = Change()
    known = state.get(iid)
    if known is not None and not known.manual and known.status != "deleted":
        raise ConnectionConflict(
            f"installation {iid} ({known.account}) is a GitHub App installation the project "
            "knows from GitHub: it is not replaced by a manual connection (its repositories "
            "come from lifecycle webhooks or `hookspawn connections sync`)",
            installationId=iid,
        )
    if known is None or not known.manual:
        owner = full_name.split("/", 1)[0]
        known = Installation(id=iid, account=owner, manual=True)
        state[iid] = known
    if any(name.lower() == full_name.lower() for name in known.repositories.values()):
        return change
    known.repositories[_stand_in_id(full_name)] = full_name
    known.status = "active"
    known.updated_at = now
    change.installations.add(iid)
    change.summary.append(f"manual connection (installation {iid}) covers {full_name}")
    return change


def remove_manual(state: State, full_name: str, *, now: float) -> Change:
    """End every manual connection's coverage of `full_name`; a manual connection left
    covering nothing is forgotten. ConnectionNotFound when none covered it."""
    full_name = repository_name(full_name)
    change = Change()
    for iid, inst in sorted(state.items()):
        if not inst.manual:
            continue
        gone = [r for r, name in inst.repositories.items() if name.lower() == full_name.lower()]
        if not gone:
            continue
        inst.remove(gone)
        inst.updated_at = now
        change.installations.add(iid)
        change.summary.append(
            f"manual connection (installation {iid}) no longer covers {full_name}"
        )
        if not inst.repositories:
            del state[iid]
    if not change.installations:
        raise ConnectionNotFound(
            f"no manual connection covers {full_name} (`hookspawn connections list` shows them)",
            repository=full_name,
        )
    return change
