"""The rules one spawn is planned with, pure: spawn ids, refs and texts rendered and checked
(a refusal is a value, never raised), the session spec they make, the requester."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import CompiledAgent, Mount, Trigger
from templating import InvalidRefError, Template, TemplateError, UnresolvableTokenError, check_ref
from triggers.session.spec import (
    BrokerAccess,
    CommitAuthor,
    Origin,
    Requester,
    SessionEnvironment,
    SessionMount,
    SessionSpec,
)

MAX_SPAWN_DEPTH = 5


@dataclass(frozen=True)
class Refusal:
    """Why a rule refuses a spawn; `code` is one of the spawn refusal codes."""

    code: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)


def refusal(code: str, message: str, **details: Any) -> Refusal:
    return Refusal(code, message, details)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def trigger_spawn_id(delivery_id: str, agent: str, trigger_key: str) -> str:
    """Deterministic: the same delivery, agent and trigger always give the same session id."""
    return "hs-" + _digest("trigger", delivery_id, agent, trigger_key)


def manual_spawn_id(agent: str, idempotency_key: str) -> str:
    return "hs-" + _digest("manual", agent, idempotency_key)


def agent_spawn_id(parent: str, agent: str, idempotency_key: str) -> str:
    return "hs-" + _digest("agent", parent, agent, idempotency_key)


def event_required(agent: CompiledAgent) -> Refusal | None:
    """Manual and agent starts carry no event: an agent with a templated ref cannot start so."""
    mounts = agent.event_dependent_mounts
    if not mounts:
        return None
    mount = mounts[0]
    return refusal(
        "event_required",
        f"agent {agent.name!r} must be started by a matching event trigger: mount "
        f"{mount.mount_path} checks out ref {mount.ref!r}, which needs an event payload",
        mountPath=mount.mount_path,
        ref=mount.ref,
    )


def render_refs(
    agent: CompiledAgent, session_input: Mapping[str, Any]
) -> tuple[str | None, ...] | Refusal:
    """Each mount's ref, rendered and checked; else the refusal unresolvable_ref / invalid_ref."""
    refs: list[str | None] = []
    for mount in agent.mounts:
        if mount.ref_template is None or not mount.ref_template.tokens:
            refs.append(mount.ref)
            continue
        try:
            ref = mount.ref_template.render(session_input)
        except UnresolvableTokenError as exc:
            return refusal(
                "unresolvable_ref",
                f"mount {mount.mount_path}: ref {mount.ref!r}: {exc.message}",
                mountPath=mount.mount_path,
                token=exc.token,
                segment=exc.segment,
                reason=exc.reason,
            )
        except TemplateError as exc:
            return refusal(
                "unresolvable_ref",
                f"mount {mount.mount_path}: {exc.message}",
                mountPath=mount.mount_path,
            )
        try:
            check_ref(ref)
        except InvalidRefError as exc:
            return refusal(
                "invalid_ref",
                f"mount {mount.mount_path}: rendered ref is not a safe git ref: {exc.message}",
                mountPath=mount.mount_path,
                ref=ref[:300],
            )
        refs.append(ref)
    return tuple(refs)


Texts = tuple[str | None, str | None, str | None]


def render_text(trigger: Trigger, envelope: Mapping[str, Any]) -> Texts | Refusal:
    """(displayTitle, initialPrompt, message) rendered against the payload; else the refusal
    unresolvable_text."""
    out: list[str | None] = []
    for field_name, template in (
        ("displayTitle", trigger.display_title),
        ("initialPrompt", trigger.initial_prompt),
        ("message", trigger.message),
    ):
        rendered = _render_one(field_name, template, envelope)
        if isinstance(rendered, Refusal):
            return rendered
        out.append(rendered)
    return out[0], out[1], out[2]


def _render_one(
    name: str, template: Template | None, envelope: Mapping[str, Any]
) -> str | Refusal | None:
    if template is None:
        return None
    try:
        return template.render(envelope)
    except UnresolvableTokenError as exc:
        return refusal(
            "unresolvable_text",
            f"{name}: {exc.message}",
            field=name,
            token=exc.token,
            segment=exc.segment,
            reason=exc.reason,
        )
    except TemplateError as exc:
        return refusal("unresolvable_text", f"{name}: {exc.message}", field=name)


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
        event_dependent=mount.event_dependent,
    )


def build_spec(
    *,
    session_id: str,
    agent: CompiledAgent,
    refs: Sequence[str | None],
    grants: Sequence[Grant | None],
    texts: Texts,
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
    sender = _sender(envelope)
    login = sender_login(envelope)
    if sender is None or sender.get("type") != "User" or not login:
        return None
    user_id = sender.get("id")
    return Requester(login=login, id=user_id if type(user_id) is int else None)


def sender_login(envelope: Mapping[str, Any]) -> str | None:
    """The login of the event's sender, whatever its type (user, bot, organization)."""
    sender = _sender(envelope)
    login = sender.get("login") if sender is not None else None
    return login if isinstance(login, str) else None


def _sender(envelope: Mapping[str, Any]) -> Mapping[str, Any] | None:
    sender = envelope.get("github", {}).get("sender")
    return sender if isinstance(sender, Mapping) else None


def named_requester(login: str | None) -> Requester | None:
    """A manual start's requester: the login it names (the CLI sends $USER), no id known."""
    return Requester(login=login, id=None) if login else None
