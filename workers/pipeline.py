"""The spawn pipeline (SPEC §6): suppress → refs → authorize and mint → texts → dispatch."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agents import CompiledAgent, Mount, Trigger
from triggers.envelope import session_input as make_session_input
from workers import metrics
from workers.agents_source import AgentsSource
from workers.connections import ConnectionStore, resync_installation
from workers.deliveries import Delivery
from workers.dispatch import Dispatcher
from workers.errors import (
    AccessRevoked,
    ConfigurationError,
    PermissionNotGranted,
    Transient,
    WorkerError,
)
from workers.github import GitHubApp
from workers.lifecycle import LIFECYCLE_EVENTS, Installation
from workers.planning import (
    Grant,
    Outcome,
    PlanRefused,
    build_spec,
    github_mounts,
    render_refs,
    render_text,
    requester_of,
    trigger_spawn_id,
)
from workers.processing import RunResult
from workers.session_spec import Origin, Requester, SessionSpec
from workers.sessions import SpawnRecords
from workers.token_cache import TokenCache

log = logging.getLogger(__name__)


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class TriggerContext:
    delivery_id: str
    trigger: Trigger
    envelope: Mapping[str, Any]
    received_at: float = 0.0  # when the delivery came in (epoch seconds), for latency
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
        outcomes: list[dict[str, Any]] = []
        staged: list[SessionSpec] | None = [] if self.dispatcher.local else None
        pending: Transient | None = None
        for candidate, decision in zip(candidates, decisions, strict=True):
            if not decision.fires:
                continue
            context = TriggerContext(
                delivery.delivery_id,
                candidate.trigger,
                envelope,
                delivery.received_at,
                first_claim=delivery.claims == 1 and delivery.runs == 0,
                connections_generation=delivery.connections_generation,
                staged=staged,
            )
            try:
                outcome = self.spawn(candidate.agent, context=context)
            except Transient as exc:
                if not final_attempt:
                    # finish the others first (idempotent on retry); keep the longest wait asked
                    if pending is None or (exc.retry_after or 0) > (pending.retry_after or 0):
                        pending = exc
                    continue
                outcome = Outcome(
                    agent=candidate.agent.name,
                    trigger=candidate.trigger.index,
                    trigger_key=candidate.trigger.key,
                    outcome="failed",
                    code=exc.code,
                    message=f"gave up after retries: {exc.message}",
                )
            outcomes.append(outcome.to_json())
        if pending is not None:
            # the spawns that got through are not held back by the one to be retried
            created = self.dispatch_staged(RunResult(outcomes=outcomes, staged=staged or []))
            metrics.session_created(delivery.received_at, created)
            # counted now: the retry finds these sessions there and counts them as repeats
            metrics.count_outcomes(
                o for o in outcomes if o["outcome"] == "dispatched" and not metrics.is_repeat(o)
            )
            raise pending
        result = RunResult(
            outcomes=outcomes, decisions=[d.to_json() for d in decisions], staged=staged or []
        )
        if notes:
            result.decisions.insert(0, {"connections": notes})
        return result

    def close(self) -> None:
        self.dispatcher.close()

    def dispatch_staged(self, result: RunResult) -> int:
        existed = {spec.id for spec in result.staged if not self.dispatcher.dispatch(spec)}
        for outcome in result.outcomes:
            if outcome.get("sessionId") in existed:
                outcome["message"] = _dispatched_message(outcome["sessionId"], created=False)
                outcome["details"] = {**outcome.get("details", {}), metrics.ALREADY_EXISTED: True}
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
    def spawn(
        self,
        agent: CompiledAgent,
        *,
        context: TriggerContext | None = None,
        session_id: str | None = None,
        texts: tuple[str | None, str | None, str | None] = (None, None, None),
        origin: Origin | None = None,
        requester: Requester | None = None,
    ) -> Outcome:
        """One spawn, ending in exactly one outcome. Raises Transient to be retried."""
        trigger = context.trigger if context else None
        if context is not None:
            session_id = trigger_spawn_id(context.delivery_id, agent.name, context.trigger.key)
        assert session_id is not None

        def outcome(kind: str, code: str | None, message: str, /, **details: Any) -> Outcome:
            return Outcome(
                agent=agent.name,
                trigger=trigger.index if trigger else None,
                trigger_key=trigger.key if trigger else None,
                outcome=kind,  # type: ignore[arg-type]
                code=code,
                message=message,
                session_id=session_id if kind == "dispatched" else None,
                details=details,
            )

        # a spawn of a delivery claimed before may have been dispatched by that run; the
        # dispatch itself is idempotent too, this only skips the work and keeps the outcome
        existing = None if context and context.first_claim else self.spawns.dispatched(session_id)
        if existing:
            message = f"session {existing} (already dispatched)"
            return outcome("dispatched", None, message, **{metrics.ALREADY_EXISTED: True})
        try:
            spec = self._plan(agent, session_id, context, texts, origin, requester)
        except _Suppressed as exc:
            return outcome("suppressed", "repository_not_covered", exc.message, **exc.details)
        except PlanRefused as exc:
            return outcome("refused", exc.code, exc.message, **exc.details)
        except ConfigurationError as exc:
            log.error("GitHub App configuration error: %s", exc.message)
            return outcome("failed", exc.code, exc.message)
        if context is not None and context.staged is not None:
            context.staged.append(spec)  # created with the delivery's run record
            return outcome("dispatched", None, _dispatched_message(spec.id, created=True))
        created = self.dispatcher.dispatch(spec)
        if created and context is not None:
            metrics.session_created(context.received_at)
        repeat = {} if created else {metrics.ALREADY_EXISTED: True}
        return outcome("dispatched", None, _dispatched_message(spec.id, created=created), **repeat)

    def _plan(
        self,
        agent: CompiledAgent,
        session_id: str,
        context: TriggerContext | None,
        texts: tuple[str | None, str | None, str | None],
        origin: Origin | None,
        requester: Requester | None,
    ) -> SessionSpec:
        envelope = context.envelope if context else None
        grants = self._coverage(
            agent, envelope, context.connections_generation if context else None
        )
        input_: dict[str, Any] | None = None
        if context is not None:
            input_ = make_session_input(context.delivery_id, dict(context.envelope))
            refs = render_refs(agent, input_)
        else:
            refs = [m.ref for m in agent.mounts]
        self._authorize(agent, grants)
        if context is not None:
            texts = render_text(context.trigger, context.envelope)
            origin = Origin(
                kind="trigger",
                delivery_id=context.delivery_id,
                trigger=context.trigger.index,
                trigger_key=context.trigger.key,
            )
            requester = requester_of(context.envelope)
        assert origin is not None
        return build_spec(
            session_id=session_id,
            agent=agent,
            refs=refs,
            grants=grants,
            texts=texts,
            session_input=input_,
            requester=requester,
            origin=origin,
            created_at=now_iso(),
            broker_url=self.broker_url,
        )

    def _coverage(
        self,
        agent: CompiledAgent,
        envelope: Mapping[str, Any] | None,
        generation: bytes | None = None,
    ) -> list[Grant | None]:
        """The installation each githubApp mount uses; suppressed/refused when not covered."""
        grants: list[Grant | None] = [None] * len(agent.mounts)
        delivery_installation = delivery_installation_of(envelope)
        for i, mount in github_mounts(agent):
            repository = mount.github_repository or mount.repository
            resolved = resolve_mount(self.connections, mount, delivery_installation, generation)
            if resolved is None:
                message = not_covered_message(mount)
                if envelope is not None:
                    raise _Suppressed(message, mountPath=mount.mount_path, repository=repository)
                raise PlanRefused(
                    "unauthorized_repository",
                    message,
                    mountPath=mount.mount_path,
                    repository=repository,
                )
            installation, repository_id = resolved
            grants[i] = Grant(installation.id, repository_id)
        return grants

    def _authorize(self, agent: CompiledAgent, grants: list[Grant | None]) -> None:
        """Mint a token scoped to each githubApp mount (when the App is configured)."""
        if self.tokens is None:
            return
        for i, mount in github_mounts(agent):
            grant = grants[i]
            assert grant is not None
            permissions = mount.auth.capabilities.token_permissions()
            repository = mount.github_repository or mount.repository
            try:
                self.tokens.get(grant.installation_id, [grant.repository_id], permissions)
            except AccessRevoked as exc:
                self._prune(exc, grant)
                raise PlanRefused(
                    "repository_access_revoked",
                    f"mount {mount.mount_path}: GitHub refused access to {repository}: "
                    f"{exc.message}",
                    mountPath=mount.mount_path,
                    repository=repository,
                    installationId=grant.installation_id,
                    kind=exc.kind,
                ) from None
            except PermissionNotGranted as exc:
                raise PlanRefused(
                    "permission_not_granted",
                    f"mount {mount.mount_path}: installation {grant.installation_id} does not "
                    f"grant what its capabilities need on {repository}: {exc.message}",
                    mountPath=mount.mount_path,
                    repository=repository,
                    permissions=permissions,
                ) from None

    def _prune(self, exc: AccessRevoked, grant: Grant) -> None:
        prune_refused(self.connections, exc, grant)


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


def _dispatched_message(session_id: str, *, created: bool) -> str:
    return f"session {session_id} {'created' if created else 'already existed'}"


def delivery_installation_of(envelope: Mapping[str, Any] | None) -> int | None:
    """The `installation.id` a delivery came with, if any."""
    if envelope is None:
        return None
    installation = envelope.get("github", {}).get("installation")
    if isinstance(installation, Mapping) and isinstance(installation.get("id"), int):
        return int(installation["id"])
    return None


def resolve_mount(
    connections: ConnectionStore,
    mount: Mount,
    delivery_installation: int | None,
    generation: bytes | None = None,
) -> tuple[Installation, int] | None:
    """The installation (and repository id) a githubApp mount uses, or None (SPEC §7)."""
    pinned = mount.auth.installation_id
    return connections.resolve(
        mount.github_repository or mount.repository,
        pinned=int(pinned) if pinned and pinned.isdigit() else None,
        delivery_installation=delivery_installation,
        generation=generation,
    )


def not_covered_message(mount: Mount) -> str:
    repository = mount.github_repository or mount.repository
    message = (
        f"mount {mount.mount_path}: repository {repository} is not covered by an "
        "active GitHub App connection"
    )
    if mount.auth.installation_id:
        message += f" (pinned installation {mount.auth.installation_id})"
    return message


class _Suppressed(WorkerError):
    code = "repository_not_covered"
