"""What the store does to the connections outside webhooks: mark, prune, re-sync (pure)."""

from __future__ import annotations

import copy
from collections.abc import Iterable

from workers.github.installation import (
    Change,
    Installation,
    State,
    Status,
    SyncReport,
    covered_names,
    joined,
)

__all__ = ["mark_status", "prune", "replace_all", "replace_one"]


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
        change.summary.append(f"installation {installation_id}: pruned {joined(pruned)}")
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
            f"covers {covered_names(fresh.repositories)}"
        )
    return change


def replace_all(state: State, fresh: Iterable[Installation], *, now: float) -> SyncReport:
    """The API's installations replace the stored set; the ones it no longer lists: deleted
    (manual connections stay: GitHub never listed them)."""
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
        if installation_id not in seen and known.status != "deleted" and not known.manual:
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
        lines.append(f"new installations: {joined(map(str, report.added))}")
    if report.deleted:
        lines.append(f"no longer listed, marked deleted: {joined(map(str, report.deleted))}")
    if report.restored:
        lines.append(f"pruned repositories restored: {joined(report.restored)}")
    return lines


def _differs(a: Installation, b: Installation) -> bool:
    return (a.account, a.status, a.repository_selection, a.repositories, a.pruned) != (
        b.account,
        b.status,
        b.repository_selection,
        b.repositories,
        b.pruned,
    )
