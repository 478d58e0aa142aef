"""Dry-run explain (`POST /explain`, `hookspawn explain`): what an event would do, changing nothing.

For every trigger of every agent: whether it fires, else the first condition that failed (the
matcher's own decision, with the failing filter's path, expected and actual value); for the
triggers that fire, already dispatched? and then the very plan the spawn pipeline executes
(triggers.spawn_plan.plan_spawn): coverage of each githubApp mount → refs → token (never
minted here: it says which installation and permissions it would ask for) → texts → dispatch,
stopping at the first refusal or suppression.

No side effects, no I/O here: the caller passes a snapshot of the connections and a read-only
lookup of spawn records; lifecycle events are not applied, and GitHub is never called.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents import CompiledAgent, Trigger
from agents.capability_defaults import marked_levels, permission_mark
from agents.github_tools import level_covers
from triggers.coverage import Connection, Coverage, repository_of
from triggers.envelope import build_envelope
from triggers.envelope_values import MISSING, lookup
from triggers.matching import Decision, TriggerIndex
from triggers.session.spec import Origin
from triggers.spawn_plan import (
    AlreadyDispatched,
    DirectStart,
    MountCoverage,
    Plan,
    Planned,
    TriggerStart,
    plan_spawn,
    plan_start,
    spawn_id,
)
from triggers.spawn_rules import Texts, manual_spawn_id, sender_login
from workers.agents_source import AgentSet
from workers.errors import WorkerError
from workers.github.lifecycle import LIFECYCLE_EVENTS

#: a read-only lookup: the session id a spawn id was dispatched as already, else None
Dispatched = Callable[[str], str | None]

__all__ = ["DEFAULT_DELIVERY_ID", "ExplainError", "explain", "explain_start", "format_explain"]

#: the delivery id an explained event gets when the caller names none
DEFAULT_DELIVERY_ID = "explain"
EVENT_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
DELIVERY_RE = re.compile(r"[A-Za-z0-9-]{1,64}")
_PREVIEW = 200
_NO_APP = "no GitHub App is configured: no installation token would be minted"


class ExplainError(WorkerError):
    """A request explain cannot answer (bad event name or delivery id)."""

    code = "invalid_request"


def explain(
    event: str,
    body: Mapping[str, Any],
    *,
    agents: AgentSet,
    coverage: Coverage[Any],
    dispatched: Dispatched | None = None,
    minting: bool = False,
    delivery_id: str | None = None,
    agent_errors: Sequence[str] = (),
) -> dict[str, Any]:
    """The dry run of one event (`body` is the raw webhook body) against the agents, with the
    connections as `coverage` read them; `minting`: a GitHub App is configured, so the
    pipeline would mint tokens."""
    if not EVENT_RE.fullmatch(event):
        raise ExplainError(
            f"event {event[:80]!r} is not a GitHub event name (lowercase letters, digits and _)",
            event=event[:80],
        )
    given = delivery_id is not None
    delivery = delivery_id if delivery_id is not None else DEFAULT_DELIVERY_ID
    if not DELIVERY_RE.fullmatch(delivery):
        raise ExplainError("deliveryId must be 1-64 of [A-Za-z0-9-]", deliveryId=delivery[:80])
    lookup_dispatched = dispatched if given else None
    envelope = build_envelope(event, delivery, dict(body))
    github = envelope["github"]
    by_agent = {agent.name: agent for agent in agents.agents}
    items = []
    for decision in agents.index.explain_all(envelope):
        agent = by_agent[decision.agent]
        item = _decision_json(decision, agent, envelope)
        if decision.fires:
            trigger = agent.triggers[decision.trigger]
            item["plan"] = _plan(
                agent, trigger, delivery, envelope, coverage, lookup_dispatched, minting
            )
        items.append(item)
    view: dict[str, Any] = {
        "event": event,
        "action": github.get("action") if isinstance(github.get("action"), str) else None,
        "repository": _repository(github),
        "sender": sender_login(envelope),
        "deliveryId": delivery,
        "summary": _summary(agents, items),
        "triggers": items,
        "notes": _notes(event, given, minting, agent_errors),
    }
    return view


def explain_start(
    agent_name: str,
    *,
    agents: AgentSet,
    coverage: Coverage[Any],
    dispatched: Dispatched | None = None,
    minting: bool = False,
    idempotency_key: str | None = None,
    texts: Texts = (None, None, None),
    origin: Origin | None = None,
) -> dict[str, Any]:
    """The dry run of a manual start of the agent named `agent_name` (or, with `origin`, of an
    agent-to-agent start): the very plan the pipeline would execute for it, as explain shows
    a trigger's. Without `idempotency_key` the spawn id is computed for the key
    DEFAULT_DELIVERY_ID and earlier dispatches are not looked up."""
    key = idempotency_key if idempotency_key is not None else DEFAULT_DELIVERY_ID
    start = DirectStart(manual_spawn_id(agent_name, key), origin or Origin(kind="manual"), texts)
    agent = agents.agent(agent_name)
    # without a key, the spawn id is the default one: nothing to look up
    lookup = dispatched if idempotency_key is not None else None
    existing = lookup(start.session_id) if lookup is not None else None
    # explain shows no creation time: the spec's is left empty
    plan = plan_start(agent_name, agent, start, coverage, created_at="", existing=existing)
    notes = [] if minting else [_NO_APP]
    return {
        "agent": agent_name,
        "start": start.origin.kind,
        "plan": _plan_json(agent, plan, minting, spawned_by="start"),
        "notes": notes,
    }


def _notes(event: str, given: bool, minting: bool, agent_errors: Sequence[str]) -> list[str]:
    notes = []
    if event in LIFECYCLE_EVENTS:
        notes.append(
            f"{event} is a connection lifecycle event: a real delivery would update the stored "
            "connections before matching; explain does not apply it"
        )
    if not given:
        notes.append(
            f"no deliveryId given: spawn ids are computed for delivery {DEFAULT_DELIVERY_ID!r} "
            "and earlier dispatches are not looked up"
        )
    if not minting:
        notes.append(_NO_APP)
    if agent_errors:
        notes.append(
            f"some agent files do not compile ({len(agent_errors)} "
            f"error{'' if len(agent_errors) == 1 else 's'}): what they name is "
            "left out, the agents that compile are explained"
        )
    return notes


def _summary(agents: AgentSet, items: list[dict[str, Any]]) -> dict[str, Any]:
    planned: dict[str, int] = {}
    for item in items:
        plan = item.get("plan")
        if plan is not None:
            planned[plan["outcome"]] = planned.get(plan["outcome"], 0) + 1
    return {
        "agents": len(agents.agents),
        "triggers": len(items),
        "fire": sum(1 for item in items if item["fires"]),
        "outcomes": planned,
    }


# -- decisions ----------------------------------------------------------------------------------


def _decision_json(
    decision: Decision, agent: CompiledAgent, envelope: Mapping[str, Any]
) -> dict[str, Any]:
    item = decision.to_json()
    trigger = agent.triggers[decision.trigger]
    item["event"] = trigger.event
    if decision.failed == "filter":
        item["filter"] = _failed_filter(agent, trigger, envelope)
    return item


def _failed_filter(
    agent: CompiledAgent, trigger: Trigger, envelope: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The first filter that does not hold, judged by the matcher itself, one filter at a time."""
    for number, filter_ in enumerate(trigger.filters):
        alone = dataclasses.replace(
            trigger, actions=None, repositories=None, branches=None, bots=True, filters=(filter_,)
        )
        probe = dataclasses.replace(agent, mounts=(), triggers=(alone,))
        [decision] = TriggerIndex((probe,)).evaluate(envelope)
        if not decision.fires:
            actual = lookup(envelope, filter_.path.split("."))
            return {
                "index": number,
                "path": filter_.path,
                "op": filter_.op,
                "expected": filter_.value,
                "present": actual is not MISSING,
                "actual": _preview(actual),
            }
    return None


def _preview(value: Any) -> Any:
    """A value small enough to show: long strings cut, big objects and lists summarized."""
    if value is MISSING:
        return None
    if isinstance(value, str):
        return value if len(value) <= _PREVIEW else value[:_PREVIEW] + "…"
    if isinstance(value, Mapping | list):
        text = json.dumps(value, default=str)
        if len(text) <= _PREVIEW:
            return value
        if isinstance(value, Mapping):
            return f"(an object with keys {', '.join(list(map(str, value))[:12])})"
        return f"(a list of {len(value)} items)"
    return value


# -- plans ----------------------------------------------------------------------------------------


def _plan(
    agent: CompiledAgent,
    trigger: Trigger,
    delivery_id: str,
    envelope: Mapping[str, Any],
    coverage: Coverage[Any],
    dispatched: Dispatched | None,
    minting: bool,
) -> dict[str, Any]:
    """The pipeline's own plan for one trigger that fires (triggers.spawn_plan), as JSON."""
    start = TriggerStart(delivery_id, trigger, envelope)
    # explain shows no creation time: the spec's is left empty
    existing = dispatched(spawn_id(agent, start)) if dispatched is not None else None
    plan = plan_spawn(agent, start, coverage, created_at="", existing=existing)
    return _plan_json(agent, plan, minting)


def _plan_json(
    agent: CompiledAgent | None, plan: Plan, minting: bool, spawned_by: str = "delivery"
) -> dict[str, Any]:
    if isinstance(plan, AlreadyDispatched):
        existing = plan.existing
        return {
            "sessionId": plan.session_id,
            "outcome": "dispatched",
            "code": None,
            "message": f"session {existing} was already dispatched for this {spawned_by}: "
            "no new spawn",
            "alreadyDispatched": existing,
        }
    out: dict[str, Any] = {
        "sessionId": plan.session_id,
        "coverage": [_coverage_json(cover, minting, agent) for cover in plan.coverage],
    }
    refs = plan.refs if plan.outcome != "suppressed" else None
    if refs is not None and agent is not None:
        out["refs"] = [
            {"mountPath": m.mount_path, "repository": repository_of(m), "ref": ref}
            for m, ref in zip(agent.mounts, refs, strict=True)
        ]
    if isinstance(plan, Planned):
        spec = plan.spec
        out["texts"] = {
            "displayTitle": spec.display_title,
            "initialPrompt": spec.initial_prompt,
            "message": spec.message,
        }
        message = f"would dispatch session {plan.session_id}"
        out.update(outcome="dispatched", code=None, message=message)
        return out
    out.update(outcome=plan.outcome, code=plan.code, message=plan.message)
    out["details"] = dict(plan.details)
    return out


def _coverage_json(
    cover: MountCoverage, minting: bool, agent: CompiledAgent | None
) -> dict[str, Any]:
    """A githubApp mount's repository: the installation covering it, or why none does; its
    effective capabilities and which of them come from the defaults."""
    entry: dict[str, Any] = {"mountPath": cover.mount_path, "repository": cover.repository}
    mount = (
        next((m for m in agent.mounts if m.mount_path == cover.mount_path), None) if agent else None
    )
    defaulted = mount.auth.capabilities.defaulted if mount is not None else ()
    if mount is not None:
        entry.update(
            capabilities=mount.auth.capabilities.to_json(), defaultCapabilities=list(defaulted)
        )
    connection, repository_id = cover.connection, cover.repository_id
    if connection is None:
        entry.update(covered=False, reason=cover.not_covered + cover.why_not)
        return entry
    entry.update(
        covered=True,
        installationId=connection.id,
        account=connection.account,
        repositoryId=repository_id,
        permissions=dict(cover.permissions),
        token=_token_note(minting, connection.id, cover.permissions)
        if not connection.manual
        else "a manual connection (`hookspawn connections add`): no token would be minted",
    )
    lacking = _lacking(connection, cover.permissions)
    if lacking:
        entry["warning"] = (
            f"installation {connection.id} was last seen granting less than this "
            f"mount needs ({', '.join(_marked(lacking, defaulted))}): GitHub would likely refuse "
            "the token "
            "(permission_not_granted)"
        )
    return entry


def _token_note(minting: bool, installation_id: int, permissions: Mapping[str, str]) -> str:
    if not minting:
        return "no GitHub App is configured: no token would be minted"
    shown = json.dumps(dict(permissions), sort_keys=True)
    return (
        f"would mint a token for installation {installation_id} with permissions {shown} "
        "(not minted by explain)"
    )


def _marked(lacking: list[str], defaulted: Sequence[str]) -> list[str]:
    """`actions: read (default)` for a permission a defaulted capability asks for."""
    return [item + permission_mark(item.split(":")[0], defaulted) for item in lacking]


def _lacking(installation: Connection, permissions: Mapping[str, str]) -> list[str]:
    """Permissions the installation's recorded grant lacks (nothing known → nothing lacking)."""
    granted = installation.permissions
    if not granted:
        return []
    return [
        f"{name}: {level}"
        for name, level in sorted(permissions.items())
        if not level_covers(granted.get(name, ""), level)
    ]


def _repository(github: Mapping[str, Any]) -> str | None:
    repository = github.get("repository")
    if isinstance(repository, Mapping) and isinstance(repository.get("fullName"), str):
        return str(repository["fullName"])
    return None


# -- text for the command line ---------------------------------------------------------------------


def format_explain(view: Mapping[str, Any]) -> str:
    """The explain answer as lines: one per trigger, then its plan when it fires."""
    head = f"{view['event']}"
    if view.get("action"):
        head += f" {view['action']}"
    if view.get("repository"):
        head += f" on {view['repository']}"
    summary = view["summary"]
    lines = [
        f"{head}: {summary['fire']} of {summary['triggers']} triggers fire "
        f"({summary['agents']} agents)"
    ]
    for item in view["triggers"]:
        label = f"{item['agent']} trigger {item['trigger']}"
        if item.get("name"):
            label += f" ({item['name']})"
        if not item["fires"]:
            lines.append(f"  {label}: no — {item['failed']}: {item['detail']}")
            continue
        plan = item.get("plan") or {}
        code = f" {plan['code']}" if plan.get("code") else ""
        lines.append(f"  {label}: fires → {plan.get('outcome')}{code}: {plan.get('message')}")
        for cover in plan.get("coverage", []):
            if cover.get("capabilities"):
                shown = marked_levels(cover["capabilities"], cover.get("defaultCapabilities", []))
                lines.append(f"    {cover['mountPath']}: capabilities {shown}")
            if cover["covered"]:
                lines.append(
                    f"    {cover['mountPath']}: {cover['repository']} covered by installation "
                    f"{cover['installationId']}; {cover['token']}"
                )
                if cover.get("warning"):
                    lines.append(f"      warning: {cover['warning']}")
            else:
                lines.append(f"    {cover['mountPath']}: not covered: {cover['reason']}")
        for ref in plan.get("refs", []):
            lines.append(f"    {ref['mountPath']}: ref {ref['ref']}")
    lines += [f"note: {note}" for note in view.get("notes", [])]
    return "".join(line + "\n" for line in lines)
