"""Spawn planning, pure: spawn ids, ref rendering and checks, text rendering, the session spec.

No I/O here: coverage and authorization are decided by the pipeline and passed in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents import CompiledAgent, Mount, Trigger
from templating import InvalidRefError, Template, TemplateError, UnresolvableTokenError, check_ref
from workers.errors import Refusal
from workers.session_spec import (
    BrokerAccess,
    CommitAuthor,
    Origin,
    Requester,
    SessionEnvironment,
    SessionMount,
    SessionSpec,
)

MAX_SPAWN_DEPTH = 5

OutcomeKind = Literal["dispatched", "refused", "suppressed", "failed"]


@dataclass(frozen=True)
class Outcome:
    """How one (agent, trigger) spawn — or one manual/agent start — ended."""

    agent: str
    outcome: OutcomeKind
    code: str | None
    message: str
    trigger: int | None = None
    trigger_key: str | None = None
    session_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "trigger": self.trigger,
            "triggerKey": self.trigger_key,
            "outcome": self.outcome,
            "code": self.code,
            "message": self.message,
            "sessionId": self.session_id,
            "details": dict(self.details),
        }


class PlanRefused(Refusal):
    """A spawn the rules refuse; `code` is one of SPEC §6's refusal codes."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message, code=code, **details)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def trigger_spawn_id(delivery_id: str, agent: str, trigger_key: str) -> str:
    """Deterministic: the same delivery, agent and trigger always give the same session id."""
    return "hs-" + _digest("trigger", delivery_id, agent, trigger_key)


def manual_spawn_id(agent: str, idempotency_key: str) -> str:
    return "hs-" + _digest("manual", agent, idempotency_key)


def agent_spawn_id(parent: str, agent: str, idempotency_key: str) -> str:
    return "hs-" + _digest("agent", parent, agent, idempotency_key)


def event_required(agent: CompiledAgent) -> PlanRefused | None:
    """Manual and agent starts carry no event: an agent with a templated ref cannot start so."""
    mounts = agent.event_dependent_mounts
    if not mounts:
        return None
    mount = mounts[0]
    return PlanRefused(
        "event_required",
        f"agent {agent.name!r} must be started by a matching event trigger: mount "
        f"{mount.mount_path} checks out ref {mount.ref!r}, which needs an event payload",
        mountPath=mount.mount_path,
        ref=mount.ref,
    )


def render_refs(agent: CompiledAgent, session_input: Mapping[str, Any]) -> list[str | None]:
    """Each mount's ref, rendered and checked; PlanRefused unresolvable_ref / invalid_ref."""
    refs: list[str | None] = []
    for mount in agent.mounts:
        if mount.ref_template is None or not mount.ref_template.tokens:
            refs.append(mount.ref)
            continue
        try:
            ref = mount.ref_template.render(session_input)
        except UnresolvableTokenError as exc:
            raise PlanRefused(
                "unresolvable_ref",
                f"mount {mount.mount_path}: ref {mount.ref!r}: {exc.message}",
                mountPath=mount.mount_path,
                token=exc.token,
                segment=exc.segment,
                reason=exc.reason,
            ) from None
        except TemplateError as exc:
            raise PlanRefused(
                "unresolvable_ref",
                f"mount {mount.mount_path}: {exc.message}",
                mountPath=mount.mount_path,
            ) from None
        try:
            check_ref(ref)
        except InvalidRefError as exc:
            raise PlanRefused(
                "invalid_ref",
                f"mount {mount.mount_path}: rendered ref is not a safe git ref: {exc.message}",
                mountPath=mount.mount_path,
                ref=ref[:300],
            ) from None
        refs.append(ref)
    return refs


def render_text(
    trigger: Trigger, envelope: Mapping[str, Any]
) -> tuple[str | None, str | None, str | None]:
    """(displayTitle, initialPrompt, message) rendered against the payload; unresolvable_text."""
    out: list[str | None] = []
    for field_name, template in (
        ("displayTitle", trigger.display_title),
        ("initialPrompt", trigger.initial_prompt),
        ("message", trigger.message),
    ):
        out.append(_render_one(field_name, template, envelope))
    return out[0], out[1], out[2]


def _render_one(name: str, template: Template | None, envelope: Mapping[str, Any]) -> str | None:
    if template is None:
        return None
    try:
        return template.render(envelope)
    except UnresolvableTokenError as exc:
        raise PlanRefused(
            "unresolvable_text",
            f"{name}: {exc.message}",
            field=name,
            token=exc.token,
            segment=exc.segment,
            reason=exc.reason,
        ) from None
    except TemplateError as exc:
        raise PlanRefused("unresolvable_text", f"{name}: {exc.message}", field=name) from None


@dataclass(frozen=True)
class Grant:
    """The installation a githubApp mount will use (no token: tokens never enter a spec)."""

    installation_id: int
    repository_id: int


def session_mount(mount: Mount, ref: str | None, grant: Grant | None) -> SessionMount:
    github = mount.auth.kind == "githubApp"
    author = mount.auth.commit_author
    return SessionMount(
        repository=mount.github_repository or mount.repository,
        url=mount.url,
        mount_path=mount.mount_path,
        ref=ref,
        depth=mount.depth,
        auth=mount.auth.kind,
        capabilities=mount.auth.capabilities.to_json() if github else None,
        commit_author=CommitAuthor(name=author["name"], email=author["email"]) if author else None,
        installation_id=grant.installation_id if grant else None,
        git_permissions=mount.auth.capabilities.git_permissions() if github else None,
    )


def build_spec(
    *,
    session_id: str,
    agent: CompiledAgent,
    refs: list[str | None],
    grants: list[Grant | None],
    texts: tuple[str | None, str | None, str | None],
    session_input: dict[str, Any] | None,
    requester: Requester | None,
    origin: Origin,
    created_at: str,
    broker_url: str | None = None,
) -> SessionSpec:
    """`broker_url`: the broker's base URL; a session with a githubApp mount gets
    `broker.url` under it (its credential is added when the spec is handed over)."""
    title, prompt, message = texts
    broker = None
    if broker_url is not None and github_mounts(agent):
        broker = BrokerAccess(url=f"{broker_url.rstrip('/')}/sessions/{session_id}")
    return SessionSpec(
        id=session_id,
        agent=agent.name,
        harness=agent.harness,
        environment=SessionEnvironment(name=agent.environment, resource=agent.environment_resource),
        system_prompt=agent.system_prompt,
        tools=[dict(t) for t in agent.tools],
        env=dict(agent.env),
        mounts=[session_mount(m, r, g) for m, r, g in zip(agent.mounts, refs, grants, strict=True)],
        working_directory=agent.working_directory,
        display_title=title,
        initial_prompt=prompt,
        message=message,
        input=session_input,
        requester=requester,
        origin=origin,
        depth=origin.depth,
        created_at=created_at,
        broker=broker,
    )


def github_mounts(agent: CompiledAgent) -> list[tuple[int, Mount]]:
    return [(i, m) for i, m in enumerate(agent.mounts) if m.auth.kind == "githubApp"]


def requester_of(envelope: Mapping[str, Any]) -> Requester | None:
    """The event's sender when a human (`type: User`) caused it; bots and apps are no requester
    (the requester becomes the git author of the agent's commits)."""
    sender = envelope.get("github", {}).get("sender")
    if not isinstance(sender, Mapping) or sender.get("type") != "User":
        return None
    login, user_id = sender.get("login"), sender.get("id")
    if not isinstance(login, str) or not login:
        return None
    return Requester(login=login, id=user_id if type(user_id) is int else None)


def named_requester(login: str | None) -> Requester | None:
    """A manual start's requester: the login it names (the CLI sends $USER), no id known."""
    return Requester(login=login, id=None) if login else None


def stored_requester(value: Any) -> Requester | None:
    """A parent session's requester as stored (`{"login", "id"}`; a bare login from before)."""
    if isinstance(value, str):
        return named_requester(value)
    if isinstance(value, Mapping) and isinstance(value.get("login"), str):
        user_id = value.get("id")
        return Requester(login=value["login"], id=user_id if type(user_id) is int else None)
    return None
