"""The spawn decision, pure: what one spawn would do, and why.

`plan_spawn` follows the spawn decision's order — already dispatched? → suppress? → render refs →
validate refs → which installation and what token would be asked → render texts → the
session spec (no token) — and answers `Planned`, `Refused`, `Suppressed` or
`AlreadyDispatched`; whether the spawn (`spawn_id`) was dispatched already is looked up by
the caller and handed in, so the decision stays pure. A manual or agent start is first
checked by `startable` (`plan_start` is both). The pipeline executes a plan (mint, which may
still refuse and prune, then dispatch); explain shows the very same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents import CompiledAgent, Trigger
from triggers.coverage import (
    Connection,
    Coverage,
    delivery_installation_of,
    not_covered_message,
    repository_of,
)
from triggers.envelope import session_input as make_session_input
from triggers.session.spec import Origin, Requester, SessionSpec
from triggers.spawn_rules import (
    MAX_SPAWN_DEPTH,
    Grant,
    Refusal,
    Texts,
    build_spec,
    event_required,
    github_mounts,
    render_refs,
    render_text,
    requester_of,
    trigger_spawn_id,
)

__all__ = [
    "AlreadyDispatched",
    "DirectStart",
    "MintRequest",
    "MountCoverage",
    "Plan",
    "Planned",
    "Refused",
    "Start",
    "Suppressed",
    "TriggerStart",
    "plan_spawn",
    "plan_start",
    "spawn_id",
    "startable",
]


@dataclass(frozen=True)
class TriggerStart:
    """A trigger that fired for a delivery."""

    delivery_id: str
    trigger: Trigger
    envelope: Mapping[str, Any]


@dataclass(frozen=True)
class DirectStart:
    """A manual or agent-to-agent start: no event behind it, its texts given."""

    session_id: str
    origin: Origin
    texts: Texts = (None, None, None)
    requester: Requester | None = None


Start = TriggerStart | DirectStart


@dataclass(frozen=True)
class MountCoverage:
    """A githubApp mount's repository: the installation covering it, or why none does."""

    index: int  # of the mount in the agent's mounts
    mount_path: str
    repository: str
    permissions: Mapping[str, str]
    connection: Connection | None = None
    repository_id: int | None = None
    #: not covered: the refusal's message, and what the snapshot knows about why
    not_covered: str = ""
    why_not: str = ""

    @property
    def grant(self) -> Grant | None:
        """The installation and repository the mount uses; None when not covered."""
        if self.connection is None or self.repository_id is None:
            return None
        return Grant(self.connection.id, self.repository_id)


@dataclass(frozen=True)
class MintRequest:
    """The token the pipeline asks for a mount: one repository, the capabilities' permissions."""

    mount_path: str
    repository: str
    grant: Grant
    permissions: Mapping[str, str]


@dataclass(frozen=True)
class Planned:
    """Every rule holds: mint these tokens, then dispatch this session."""

    session_id: str
    coverage: tuple[MountCoverage, ...]
    refs: tuple[str | None, ...]
    mints: tuple[MintRequest, ...]
    spec: SessionSpec
    outcome: Literal["dispatched"] = "dispatched"


@dataclass(frozen=True)
class Refused:
    """A rule refuses the spawn. `mints` are the tokens the decision asks before the refusing rule
    (a text refusal comes after them): the pipeline still asks them, and a refusal of one
    of them is the outcome instead."""

    session_id: str
    code: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)
    coverage: tuple[MountCoverage, ...] = ()
    refs: tuple[str | None, ...] | None = None
    mints: tuple[MintRequest, ...] = ()
    outcome: Literal["refused"] = "refused"


@dataclass(frozen=True)
class Suppressed:
    """A trigger-driven spawn whose repository is not covered: no GitHub call is made."""

    session_id: str
    message: str
    details: Mapping[str, Any]
    coverage: tuple[MountCoverage, ...]
    code: Literal["repository_not_covered"] = "repository_not_covered"
    outcome: Literal["suppressed"] = "suppressed"


@dataclass(frozen=True)
class AlreadyDispatched:
    """The spawn's session was dispatched before (a redelivery, a repeated start): the
    spawn is done, nothing new is planned."""

    session_id: str
    existing: str  # the session id it was dispatched as
    outcome: Literal["dispatched"] = "dispatched"


Plan = Planned | Refused | Suppressed | AlreadyDispatched


def spawn_id(agent: CompiledAgent, start: Start) -> str:
    """The id of the session a spawn would create (deterministic: a redelivery or a repeated
    start gets the same one): what a caller looks up before planning, to tell `plan_spawn`
    whether it was dispatched already."""
    if isinstance(start, TriggerStart):
        return trigger_spawn_id(start.delivery_id, agent.name, start.trigger.key)
    return start.session_id


def plan_spawn(
    agent: CompiledAgent,
    start: Start,
    coverage: Coverage[Any],
    *,
    created_at: str,
    broker_url: str | None = None,
    existing: str | None = None,
) -> Plan:
    """The plan of one spawn of `agent`, from the connections as `coverage` saw them.

    `broker_url`: the credential broker's base URL, under which a session with a githubApp
    mount finds its broker; None plans specs without one. `existing`: the session id the
    spawn (`spawn_id`) was dispatched as already, as the caller found it; None when it was
    not, or not looked up."""
    if existing:
        return AlreadyDispatched(spawn_id(agent, start), existing)
    if isinstance(start, TriggerStart):
        return _plan_trigger(agent, start, coverage, created_at, broker_url)
    return _plan_direct(agent, start, coverage, created_at, broker_url)


def plan_start(
    agent_name: str,
    agent: CompiledAgent | None,
    start: DirectStart,
    coverage: Coverage[Any],
    *,
    created_at: str,
    broker_url: str | None = None,
    existing: str | None = None,
) -> Plan:
    """The plan of a manual or agent start of the agent named `agent_name` (`agent`: it, as
    the agents found it; None when there is none); `existing` as for `plan_spawn`."""
    checked = startable(agent_name, agent, start)
    if isinstance(checked, Refused):
        return checked
    return plan_spawn(
        checked,
        start,
        coverage,
        created_at=created_at,
        broker_url=broker_url,
        existing=existing,
    )


def startable(
    agent_name: str, agent: CompiledAgent | None, start: DirectStart
) -> CompiledAgent | Refused:
    """The agent a manual or agent start may start, or why it may not start it at all, before
    anything is asked: `spawn_depth_exceeded` (an agent-to-agent chain too deep),
    `agent_not_found`, `event_required` (a templated ref needs an event). `agent`: the one
    named `agent_name`, as the agents found it (None: there is none)."""
    depth = start.origin.depth
    if depth > MAX_SPAWN_DEPTH:
        return Refused(
            start.session_id,
            "spawn_depth_exceeded",
            f"session {start.origin.parent_session_id} is at depth {depth - 1}: an "
            f"agent-to-agent chain may be at most {MAX_SPAWN_DEPTH} deep",
            {"depth": depth, "limit": MAX_SPAWN_DEPTH},
        )
    if agent is None:
        return Refused(start.session_id, "agent_not_found", f"no agent named {agent_name!r}")
    needs_event = event_required(agent)
    if needs_event is not None:
        return Refused(start.session_id, needs_event.code, needs_event.message, needs_event.details)
    return agent


def _plan_trigger(
    agent: CompiledAgent,
    start: TriggerStart,
    coverage: Coverage[Any],
    created_at: str,
    broker_url: str | None,
) -> Plan:
    session_id = trigger_spawn_id(start.delivery_id, agent.name, start.trigger.key)
    covered = _cover(agent, coverage, delivery_installation_of(start.envelope))
    uncovered = _first_uncovered(covered)
    if uncovered is not None:
        return Suppressed(session_id, uncovered.not_covered, _where(uncovered), covered)
    session_input = make_session_input(start.delivery_id, dict(start.envelope))
    refs = render_refs(agent, session_input)
    if isinstance(refs, Refusal):
        return Refused(session_id, refs.code, refs.message, refs.details, covered)
    mints = _mints(covered)
    texts = render_text(start.trigger, start.envelope)
    if isinstance(texts, Refusal):
        return Refused(session_id, texts.code, texts.message, texts.details, covered, refs, mints)
    origin = Origin(
        kind="trigger",
        delivery_id=start.delivery_id,
        trigger=start.trigger.index,
        trigger_key=start.trigger.key,
    )
    spec = build_spec(
        session_id=session_id,
        agent=agent,
        refs=refs,
        grants=_grants(agent, covered),
        texts=texts,
        session_input=session_input,
        requester=requester_of(start.envelope),
        origin=origin,
        created_at=created_at,
        broker_url=broker_url,
    )
    return Planned(session_id, covered, refs, mints, spec)


def _plan_direct(
    agent: CompiledAgent,
    start: DirectStart,
    coverage: Coverage[Any],
    created_at: str,
    broker_url: str | None,
) -> Plan:
    covered = _cover(agent, coverage, None)
    uncovered = _first_uncovered(covered)
    if uncovered is not None:
        return Refused(
            start.session_id,
            "unauthorized_repository",
            uncovered.not_covered,
            _where(uncovered),
            covered,
        )
    refs = tuple(m.ref for m in agent.mounts)  # no event: never templated (event_required)
    spec = build_spec(
        session_id=start.session_id,
        agent=agent,
        refs=refs,
        grants=_grants(agent, covered),
        texts=start.texts,
        session_input=None,
        requester=start.requester,
        origin=start.origin,
        created_at=created_at,
        broker_url=broker_url,
    )
    return Planned(start.session_id, covered, refs, _mints(covered), spec)


def _cover(
    agent: CompiledAgent, coverage: Coverage[Any], delivery_installation: int | None
) -> tuple[MountCoverage, ...]:
    """Each githubApp mount of the agent, with the installation covering its repository."""
    out = []
    for index, mount in github_mounts(agent):
        repository = repository_of(mount)
        permissions = mount.auth.capabilities.token_permissions()
        found = coverage.resolve_mount(mount, delivery_installation)
        if found is None:
            entry = MountCoverage(
                index,
                mount.mount_path,
                repository,
                permissions,
                not_covered=not_covered_message(mount),
                why_not=coverage.why_not(mount),
            )
        else:
            connection, repository_id = found
            entry = MountCoverage(
                index, mount.mount_path, repository, permissions, connection, repository_id
            )
        out.append(entry)
    return tuple(out)


def _first_uncovered(covered: tuple[MountCoverage, ...]) -> MountCoverage | None:
    return next((c for c in covered if c.grant is None), None)


def _where(mount: MountCoverage) -> dict[str, Any]:
    return {"mountPath": mount.mount_path, "repository": mount.repository}


def _mints(covered: tuple[MountCoverage, ...]) -> tuple[MintRequest, ...]:
    """The tokens to ask for: none for a manual connection (no installation behind it)."""
    return tuple(
        MintRequest(c.mount_path, c.repository, c.grant, c.permissions)
        for c in covered
        if c.grant is not None and c.connection is not None and not c.connection.manual
    )


def _grants(agent: CompiledAgent, covered: tuple[MountCoverage, ...]) -> list[Grant | None]:
    by_mount = {c.index: c.grant for c in covered}
    return [by_mount.get(i) for i in range(len(agent.mounts))]
