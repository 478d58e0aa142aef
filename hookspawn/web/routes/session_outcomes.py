"""The session status a delivery's dispatched outcomes carry, read when the delivery is read.

Processing a delivery never writes it: the status is the session's run record as it stands
now (HOOKSPAWN_RUNNER=local), so a delivery page shows what became of what it dispatched.
In dispatch mode there is no run record and the outcome carries no `sessionStatus`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from workers.runtime import Runtime

__all__ = ["latest_outcomes", "with_session_status"]


def _dispatched(outcomes: Iterable[dict[str, Any]]) -> list[str]:
    return [
        str(o["sessionId"])
        for o in outcomes
        if o.get("outcome") == "dispatched" and o.get("sessionId")
    ]


def with_session_status(rt: Runtime, outcomes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The outcomes, each dispatched one with `sessionStatus` when a run record is kept (and
    `sessionFailure`, the failure's code, when the session failed)."""
    ids = _dispatched(outcomes)
    runs = rt.runs.views(ids) if ids else {}
    shown = []
    for o in outcomes:
        run = runs.get(str(o.get("sessionId"))) if o.get("outcome") == "dispatched" else None
        if run is None:
            shown.append(dict(o))
            continue
        code = {"sessionFailure": run.failure.code} if run.failure is not None else {}
        shown.append({**o, "sessionStatus": run.status.value, **code})
    return shown


def latest_outcomes(rt: Runtime, delivery_ids: Sequence[str]) -> list[list[dict[str, Any]]]:
    """The latest run's outcomes of each delivery (with their session status), in two round
    trips however many deliveries."""
    if not delivery_ids:
        return []
    latest = rt.store.last_runs(delivery_ids)
    each: list[list[dict[str, Any]]] = [
        list(orjson.loads(run).get("outcomes", [])) if run else [] for run in latest
    ]
    shown = with_session_status(rt, [o for outcomes in each for o in outcomes])
    out: list[list[dict[str, Any]]] = []
    at = 0
    for outcomes in each:
        out.append(shown[at : at + len(outcomes)])
        at += len(outcomes)
    return out
