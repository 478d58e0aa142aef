"""Readable text for what the client commands print by default (`--json` prints the answer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workers.delivery.outcome_words import delivery_words, words_text

__all__ = [
    "deliveries_text",
    "delivery_text",
    "replay_text",
    "session_text",
    "sessions_text",
]

#: session statuses that are not a success (a delivery with one is not shown as one)
UNSUCCESSFUL = ("failed", "cancelled")


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in rows
    )


def _event(item: Mapping[str, Any]) -> str:
    action = item.get("action")
    return f"{item.get('event')}.{action}" if action else str(item.get("event"))


def deliveries_text(answer: Mapping[str, Any]) -> str:
    """`deliveries list`: one line per delivery, newest first."""
    items = answer.get("items") or []
    if not items:
        return "no deliveries\n"
    rows = [["DELIVERY", "EVENT", "REPOSITORY", "OUTCOME", "SESSIONS", "RECEIVED"]]
    rows += [
        [
            str(d.get("deliveryId")),
            _event(d),
            str(d.get("repository") or "-"),
            _words(d),
            _sessions_of(d.get("outcomes") or []),
            str(d.get("receivedAt") or "-"),
        ]
        for d in items
    ]
    return _table(rows)


def _words(d: Mapping[str, Any]) -> str:
    """What the delivery came to (workers.delivery.outcome_words, as /ui says it)."""
    return words_text(delivery_words(str(d.get("status")), d.get("error"), d.get("outcomes") or []))


def _sessions_of(outcomes: Sequence[Mapping[str, Any]]) -> str:
    """What became of the sessions a delivery dispatched: `2 succeeded, 1 failed`; `-` for
    none, or where no local runner runs them (their status is not known here)."""
    counts: dict[str, int] = {}
    for o in outcomes:
        if o.get("outcome") == "dispatched" and o.get("sessionStatus"):
            status = str(o["sessionStatus"])
            counts[status] = counts.get(status, 0) + 1
    # what went wrong first: a failure is never the tail of a line that reads as a success
    ordered = sorted(counts.items(), key=lambda kv: (kv[0] not in UNSUCCESSFUL, kv[0]))
    return ", ".join(f"{n} {status}" for status, n in ordered) or "-"


def replay_text(answer: Mapping[str, Any], follow: str) -> str:
    """`deliveries replay`: queued, and which sessions already exist (not run again)."""
    lines = [f"replay of {answer.get('deliveryId')} {answer.get('status', 'queued')}"]
    for s in answer.get("existingSessions") or []:
        status = f" ({s['sessionStatus']})" if s.get("sessionStatus") else ""
        lines.append(
            f"session {s.get('sessionId')}{status} of {s.get('agent')} already exists: "
            "it is not run again"
        )
    lines.append(f"follow it at {follow}")
    return "".join(line + "\n" for line in lines)


def _outcome(o: Mapping[str, Any]) -> str:
    """One spawn's outcome in the words of the delivery's: `dispatched, session ID (status)`,
    `suppressed: CODE (message)`."""
    trigger = o.get("triggerKey") or o.get("trigger")
    head = f"{o.get('agent')} (trigger {trigger}): {o.get('outcome')}"
    if o.get("outcome") == "dispatched":
        status = o.get("sessionStatus")
        return f"{head}, session {o.get('sessionId')}" + (f" ({status})" if status else "")
    return f"{head}: {o.get('code')} ({o.get('message')})"


def delivery_text(d: Mapping[str, Any]) -> str:
    """`deliveries show`: what arrived, what it came to, and one line per outcome."""
    lines = [
        f"delivery {d.get('deliveryId')}: {_event(d)} on {d.get('repository') or '-'}",
        f"outcome: {_words(d)} (received {d.get('receivedAt') or '-'}, "
        f"processed {d.get('processedAt') or 'not yet'})",
    ]
    if d.get("error"):
        lines.append(f"error: {d['error']}")
    outcomes = d.get("outcomes") or []
    if outcomes:
        lines.append("outcomes:")
        lines += [f"  {_outcome(o)}" for o in outcomes]
    return "".join(line + "\n" for line in lines)


def sessions_text(answer: Mapping[str, Any]) -> str:
    """`sessions list`: one line per session, newest first."""
    items = answer.get("items") or []
    if not items:
        return "no sessions\n"
    rows = [["SESSION", "AGENT", "STATUS", "CREATED", "ORIGIN", "TITLE"]]
    rows += [
        [
            str(s.get("id")),
            str(s.get("agent")),
            _status_of(s),
            str(s.get("createdAt") or "-"),
            _origin(s.get("origin") or {}),
            str(s.get("displayTitle") or ""),
        ]
        for s in items
    ]
    return _table(rows)


def _status_of(s: Mapping[str, Any]) -> str:
    """A session's status with its failure code (`failed runner_lost`); `-` when no local
    runner runs it."""
    failure = s.get("failure")
    code = f" {failure.get('code')}" if isinstance(failure, Mapping) else ""
    run = s.get("harnessRun")
    skipped = " (harness skipped)" if isinstance(run, Mapping) and run.get("skipped") else ""
    return f"{s.get('status')}{code}{skipped}" if s.get("status") else "-"


def harness_lines(s: Mapping[str, Any]) -> list[str]:
    """How the session's harness ran: name and version (or why it was skipped), what it
    used, and its answer."""
    run = s.get("harnessRun")
    if not isinstance(run, Mapping):
        return []
    if run.get("skipped"):
        lines = [f"harness: {run.get('name')} skipped: {run['skipped']}"]
    else:
        lines = [f"harness: {run.get('name')} {run.get('version') or ''}".rstrip()]
    usage = s.get("usage")
    if isinstance(usage, Mapping):
        cost = f", ${usage['costUsd']:.4f}" if usage.get("costUsd") is not None else ""
        lines.append(
            f"usage: {usage.get('inputTokens')} tokens in, {usage.get('outputTokens')} out, "
            f"{usage.get('turns')} turn(s){cost}"
        )
    if s.get("result"):
        lines.append("result:")
        lines += [f"  {line}" for line in str(s["result"]).splitlines()]
    return lines


def _origin(origin: Mapping[str, Any]) -> str:
    kind = str(origin.get("kind") or "-")
    if kind == "trigger" and origin.get("deliveryId"):
        return f"trigger {origin['deliveryId']}"
    if kind == "agent" and origin.get("parentSessionId"):
        return f"agent {origin['parentSessionId']}"
    return kind


def _mount(m: Mapping[str, Any]) -> str:
    capabilities = m.get("capabilities") or {}
    granted = ", ".join(f"{k} {v}" for k, v in capabilities.items() if v != "none")
    auth = f"{m.get('auth')}: {granted}" if granted else str(m.get("auth"))
    return f"{m.get('mountPath')}  {m.get('repository')} @ {m.get('ref') or '-'}  ({auth})"


def session_text(s: Mapping[str, Any]) -> str:
    """`sessions show`: the session's agent, origin, mounts and texts."""
    harness = s.get("harness")  # the agent's harness name, or how a runner ran it
    named = harness.get("name") if isinstance(harness, Mapping) else harness
    lines = [
        f"session {s.get('id')}",
        f"agent: {s.get('agent')} ({named})",
        f"created: {s.get('createdAt')}",
        f"origin: {_origin(s.get('origin') or {})}",
    ]
    if s.get("status"):
        lines.append(f"status: {s['status']}")
    failure = s.get("failure")
    if isinstance(failure, Mapping):
        lines.append(f"failure: {failure.get('code')}: {failure.get('message')}")
    lines += harness_lines(s)
    if s.get("workspace"):
        lines.append(f"workspace: {s['workspace']}")
    if s.get("displayTitle"):
        lines.append(f"title: {s['displayTitle']}")
    mounts = s.get("mounts") or []
    if mounts:
        lines.append("mounts:")
        lines += [f"  {_mount(m)}" for m in mounts]
    for key, label in (("initialPrompt", "prompt"), ("message", "message")):
        if s.get(key):
            lines.append(f"{label}:")
            lines += [f"  {line}" for line in str(s[key]).splitlines()]
    return "".join(line + "\n" for line in lines)


def connections_text(answer: Mapping[str, Any]) -> str:
    """`connections list`: one line per installation with the repositories it covers."""
    items = answer.get("items") or []
    if not items:
        return (
            "no connections (install the GitHub App, or `hookspawn connections sync`; to try "
            "without an App: `hookspawn connections add OWNER/NAME`)\n"
        )
    rows = [["INSTALLATION", "ACCOUNT", "STATUS", "COVERS"]]
    for inst in items:
        covers = ", ".join(r["fullName"] for r in inst.get("repositories") or []) or "-"
        pruned = [r["fullName"] for r in inst.get("pruned") or []]
        if pruned:
            covers += f" (pruned: {', '.join(pruned)})"
        status = str(inst.get("status")) + (" manual" if inst.get("manual") else "")
        status += " demo" if inst.get("demo") else ""
        rows.append([str(inst.get("id")), str(inst.get("account")), status, covers])
    return _table(rows) + "".join(line + "\n" for line in _shadowed(items))


def _shadowed(items: list[Mapping[str, Any]]) -> list[str]:
    """A repository both an App installation and a manual connection cover: which decides."""
    names: dict[str, str] = {}
    covering: dict[str, list[Mapping[str, Any]]] = {}
    for inst in items:
        if inst.get("status") != "active":
            continue
        for repository in inst.get("repositories") or []:
            key = str(repository["fullName"]).lower()
            names.setdefault(key, str(repository["fullName"]))
            covering.setdefault(key, []).append(inst)
    lines = []
    for key, found in covering.items():
        apps = sorted(int(i["id"]) for i in found if not i.get("manual"))
        manual = ", ".join(str(i["id"]) for i in found if i.get("manual"))
        if apps and manual:
            lines.append(
                f"{names[key]}: covered by installation {apps[0]} and by manual connection "
                f"{manual}; installation {apps[0]} decides (an App installation wins over a "
                "manual connection)"
            )
    return lines


def _count(n: Any, one: str, many: str | None = None) -> str:
    """`1 installation`, `2 installations`: the noun agrees with the number."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def sync_text(answer: Mapping[str, Any]) -> str:
    """`connections sync`: what the sync changed."""
    head = (
        f"synced {_count(answer.get('installations'), 'installation')} covering "
        f"{_count(answer.get('repositories'), 'repository', 'repositories')}"
    )
    return "".join(line + "\n" for line in [head, *(answer.get("summary") or [])])
