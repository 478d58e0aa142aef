"""The spawn pipeline: read the connections, plan (triggers.spawn_plan), execute.

Executing a plan is the I/O the pure plan leaves: mint the tokens it asks for (a definitive
refusal from GitHub prunes the grant and refuses the spawn), then dispatch its session.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from agents import CompiledAgent, Trigger
from triggers.outcome import Outcome, OutcomeKind
from triggers.session.spec import SessionSpec
from triggers.spawn_plan import (
    AlreadyDispatched,
    DirectStart,
    MintRequest,
    Plan,
    Planned,
    Suppressed,
    TriggerStart,
    plan_spawn,
    spawn_id,
)
from triggers.spawn_rules import Refusal
from triggers.timestamps import now_iso
from workers import metrics
from workers.agents_source import AgentsSource
from workers.delivery.dispatch import Dispatcher
from workers.delivery.processing import RunResult
from workers.delivery.record import Delivery
from workers.errors import ConfigurationError, DispatchUnavailable, Transient
from workers.github.client import GitHubApp
from workers.github.connections import ConnectionStore, resync_installation
from workers.github.lifecycle import LIFECYCLE_EVENTS
from workers.github.minting import mint_or_refuse
from workers.github.token_cache import TokenCache
from workers.session.records import SpawnRecords

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeliveryRun:
    """The run of a delivery its trigger spawns belong to."""

    delivery_id: str
    envelope: Mapping[str, Any]
    #: where its sessions' latency starts (epoch seconds; 0: not timed), `Delivery.timed_from`
    received_at: float = 0.0
    #: no worker claimed the delivery before: none of its spawns can exist yet
    first_claim: bool = False
    #: the connections generation read with the claim (None: read the connections)
    connections_generation: bytes | None = None
    #: where a spawn leaves its session to be created with the delivery's run record
    #: (None: dispatch it at once)
    staged: list[SessionSpec] | None = None


class SpawnPipeline:
    """Decides and carries out spawns; shared by deliveries, manual and agent-to-agent starts."""

    def __init__(
        self,
        *,
        agents: AgentsSource,
        connections: ConnectionStore,
        dispatcher: Dispatcher,
        spawns: SpawnRecords,
        github: GitHubApp | None = None,
        tokens: TokenCache | None = None,
        broker_url: str | None = None,
    ) -> None:
        self.agents = agents
        self.broker_url = broker_url
        self.connections = connections
        self.dispatcher = dispatcher
        self.spawns = spawns
        self.github = github
        self.tokens = tokens

    # deliveries ------------------------------------------------------------------
    def run(
        self,
        delivery: Delivery,
        body: Mapping[str, Any],
        envelope: dict[str, Any],
        *,
        final_attempt: bool,
    ) -> RunResult:
        notes = self._apply_lifecycle(delivery.event, body)
        agent_set = self.agents.current()
        decisions = agent_set.index.evaluate(envelope)
        candidates = agent_set.index.candidates(delivery.event)
        outcomes: list[Outcome] = []
        staged: list[SessionSpec] | None = [] if self.dispatcher.local else None
        pending: Transient | None = None
        run = DeliveryRun(
            delivery.delivery_id,
            envelope,
            delivery.timed_from,
            first_claim=delivery.claims == 1 and delivery.runs == 0,
            connections_generation=delivery.connections_generation,
            staged=staged,
        )
        for candidate, decision in zip(candidates, decisions, strict=True):
            if not decision.fires:
                continue
            try:
                outcome = self.spawn_trigger(candidate.agent, candidate.trigger, run)
            except Transient as exc:
                if not final_attempt:
                    # finish the others first (idempotent on retry); keep the longest wait asked
                    if pending is None or (exc.retry_after or 0) > (pending.retry_after or 0):
                        pending = exc
                    continue
                abandoned = exc.details.get("sessionId")
                if isinstance(exc, DispatchUnavailable) and isinstance(abandoned, str):
                    self.dispatcher.abandon(abandoned)  # what it handed out goes with it
                outcome = Outcome(
                    agent=candidate.agent.name,
                    trigger=candidate.trigger.index,
                    trigger_key=candidate.trigger.key,
                    outcome="failed",
                    code=exc.code,
                    message=f"gave up after retries: {exc.message}",
                )
            outcomes.append(outcome)
        if pending is not None:
            # the spawns that got through are not held back by the one to be retried
            done = RunResult(outcomes=outcomes, staged=staged or [])
            created = self.dispatch_staged(done)
            metrics.session_created(delivery.timed_from, created)
            # counted now: the retry finds these sessions there and counts them as repeats
            metrics.count_outcomes(
                o for o in done.outcomes if o.outcome == "dispatched" and not o.repeat
            )
            raise pending
        return RunResult(
            outcomes=outcomes,
            decisions=decisions,
            connections=notes,
            staged=staged or [],
            agents_generation=agent_set.generation,
        )

    def close(self) -> None:
        self.dispatcher.close()

    def dispatch_staged(self, result: RunResult) -> int:
        existed = {spec.id for spec in result.staged if not self.dispatcher.dispatch(spec)}
        result.outcomes = [
            replace(
                o, message=_dispatched_message(o.session_id, created=False), already_existed=True
            )
            if o.session_id is not None and o.session_id in existed
            else o
            for o in result.outcomes
        ]
        created = len(result.staged) - len(existed)
        result.staged = []
        return created

    def _apply_lifecycle(self, event: str, body: Mapping[str, Any]) -> list[str]:
        if event not in LIFECYCLE_EVENTS:
            return []
        change = self.connections.apply_event(event, body)
        notes = list(change.summary)
        for installation_id in sorted(change.resync):
            if self.github is None:
                notes.append(f"installation {installation_id} needs a sync (no App credentials)")
                continue
            try:
                resync_installation(self.connections, self.github, installation_id)
                notes.append(f"installation {installation_id} re-synced from the API")
            except (Transient, ConfigurationError) as exc:
                log.warning("re-sync of installation %s failed: %s", installation_id, exc.message)
                notes.append(f"installation {installation_id} re-sync failed: {exc.message}")
        if self.tokens is not None:
            for installation_id in change.installations:
                self.tokens.invalidate_installation(installation_id)
        return notes

    # one spawn -------------------------------------------------------------------
    def spawn_trigger(self, agent: CompiledAgent, trigger: Trigger, run: DeliveryRun) -> Outcome:
        """One trigger's spawn, ending in exactly one outcome. Raises Transient to be retried."""
        start = TriggerStart(run.delivery_id, trigger, run.envelope)
        # a spawn of a delivery claimed before may have been dispatched by that run; the
        # dispatch itself is idempotent too, this only skips the work and keeps the outcome
        existing = None if run.first_claim else self.spawns.dispatched(spawn_id(agent, start))
        plan = plan_spawn(
            agent,
            start,
            self.connections.snapshot(run.connections_generation),
            created_at=now_iso(),
            broker_url=self.broker_url,
            existing=existing,
        )
        return self._execute(agent, trigger, plan, staged=run.staged, received_at=run.received_at)

    def start(self, agent: CompiledAgent, start: DirectStart) -> Outcome:
        """A manual or agent-to-agent start, ending in one outcome. Raises Transient."""
        plan = plan_spawn(
            agent,
            start,
            self.connections.snapshot(),
            created_at=now_iso(),
            broker_url=self.broker_url,
            existing=self.spawns.dispatched(start.session_id),
        )
        return self._execute(agent, None, plan, staged=None, received_at=None)

    def _execute(
        self,
        agent: CompiledAgent,
        trigger: Trigger | None,
        plan: Plan,
        *,
        staged: list[SessionSpec] | None,
        received_at: float | None,
    ) -> Outcome:
        """Mint what the plan asks, then dispatch its session (or stage it with the run)."""
        session_id = plan.session_id
        if isinstance(plan, AlreadyDispatched):
            message = f"session {plan.existing} (already dispatched)"
            return _outcome(agent, trigger, session_id, "dispatched", None, message, repeat=True)
        if isinstance(plan, Suppressed):
            return _outcome(
                agent, trigger, session_id, "suppressed", plan.code, plan.message, plan.details
            )
        try:
            refused = self._mint(plan.mints)
        except ConfigurationError as exc:
            log.error("GitHub App configuration error: %s", exc.message)
            return _outcome(agent, trigger, session_id, "failed", exc.code, exc.message)
        if refused is None:
            if isinstance(plan, Planned):
                return self._dispatch(agent, trigger, plan.spec, staged, received_at)
            refused = Refusal(plan.code, plan.message, plan.details)
        return _outcome(
            agent, trigger, session_id, "refused", refused.code, refused.message, refused.details
        )

    def _dispatch(
        self,
        agent: CompiledAgent,
        trigger: Trigger | None,
        spec: SessionSpec,
        staged: list[SessionSpec] | None,
        received_at: float | None,
    ) -> Outcome:
        if staged is not None:
            staged.append(spec)  # created with the delivery's run record
            message = _dispatched_message(spec.id, created=True)
            return _outcome(agent, trigger, spec.id, "dispatched", None, message)
        created = self.dispatcher.dispatch(spec)
        if created and received_at is not None:
            metrics.session_created(received_at)
        message = _dispatched_message(spec.id, created=created)
        return _outcome(agent, trigger, spec.id, "dispatched", None, message, repeat=not created)

    def _mint(self, mints: tuple[MintRequest, ...]) -> Refusal | None:
        """Ask each token the plan needs (when the App is configured); GitHub's definitive
        refusal of one prunes what it lost and refuses the spawn."""
        if self.tokens is None:
            return None
        for mint in mints:
            minted = mint_or_refuse(
                partial(
                    self.tokens.get,
                    mint.grant.installation_id,
                    [mint.grant.repository_id],
                    mint.permissions,
                ),
                self.connections,
                mint.grant,
                repository=mint.repository,
                permissions=mint.permissions,
                mount_path=mint.mount_path,
            )
            if isinstance(minted, Refusal):
                return minted
        return None


def _dispatched_message(session_id: str, *, created: bool) -> str:
    return f"session {session_id} {'created' if created else 'already existed'}"


def _outcome(
    agent: CompiledAgent,
    trigger: Trigger | None,
    session_id: str,
    kind: OutcomeKind,
    code: str | None,
    message: str,
    details: Mapping[str, Any] | None = None,
    *,
    repeat: bool = False,
) -> Outcome:
    return Outcome(
        agent=agent.name,
        trigger=trigger.index if trigger else None,
        trigger_key=trigger.key if trigger else None,
        outcome=kind,
        code=code,
        message=message,
        session_id=session_id if kind == "dispatched" else None,
        details=dict(details or {}),
        already_existed=repeat,
    )
