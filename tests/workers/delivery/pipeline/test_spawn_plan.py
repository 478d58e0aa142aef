"""plan_spawn, the one spawn decision, driven with data: no store, no broker, no GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import CompiledAgent
from tests.agents.conftest import Tree
from triggers.coverage import Coverage
from triggers.envelope import build_envelope
from triggers.json_codec import load_body
from triggers.session.spec import Origin, Requester
from triggers.spawn_plan import (
    AlreadyDispatched,
    DirectStart,
    Planned,
    Refused,
    Suppressed,
    TriggerStart,
    plan_spawn,
    spawn_id,
)
from triggers.spawn_rules import Grant, trigger_spawn_id
from workers.github.installation import Installation

REPO = "Codertocat/Hello-World"
NOW = "2026-12-01T00:00:00Z"

AGENT = """\
mounts:
  - kind: git
    repository: Codertocat/Hello-World
    mountPath: /workspace/hello
    ref: refs/pull/{{payload.github.pullRequest.number}}/head
    auth: {kind: githubApp, capabilities: {contents: read, pullRequests: write}}
triggers:
  - event: pull_request
    name: review
    displayTitle: "Review #{{ github.pullRequest.number }}"
"""

PLAIN = """\
mounts:
  - kind: git
    repository: Codertocat/Hello-World
    mountPath: /workspace/hello
    ref: main
    auth: {kind: githubApp, capabilities: {contents: write}}
triggers:
  - event: pull_request
    message: "{{ github.comment.body }}"
"""


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path / ".auto")


@pytest.fixture
def envelope(webhooks_dir: Path) -> dict[str, Any]:
    body = load_body((webhooks_dir / "pull_request/opened.payload.json").read_bytes())
    return build_envelope("pull_request", "d-1", body)


def connected(*installations: Installation) -> Coverage[Installation]:
    return Coverage({inst.id: inst for inst in installations})


def covering(installation_id: int = 7, status: str = "active") -> Installation:
    return Installation(
        id=installation_id,
        account="Codertocat",
        status=status,  # type: ignore[arg-type]
        repositories={70: REPO},
    )


def fired(agent: CompiledAgent, envelope: dict[str, Any]) -> TriggerStart:
    return TriggerStart("d-1", agent.triggers[0], envelope)


def test_a_covered_trigger_is_planned_with_its_mint_request_and_spec(
    tree: Tree, envelope: dict[str, Any]
) -> None:
    agent = tree.agent(AGENT)
    plan = plan_spawn(agent, fired(agent, envelope), connected(covering()), created_at=NOW)
    assert isinstance(plan, Planned)
    assert plan.session_id == trigger_spawn_id("d-1", agent.name, "review")
    assert plan.refs == ("refs/pull/2/head",)
    [mint] = plan.mints
    assert (mint.mount_path, mint.repository, mint.grant) == (
        "/workspace/hello",
        REPO,
        Grant(7, 70),
    )
    assert mint.permissions == agent.mounts[0].auth.capabilities.token_permissions()
    spec = plan.spec
    assert spec.id == plan.session_id and spec.created_at == NOW
    assert spec.display_title == "Review #2"
    assert spec.mounts[0].ref == "refs/pull/2/head" and spec.mounts[0].installation_id == 7
    assert spec.origin == Origin(kind="trigger", delivery_id="d-1", trigger=0, trigger_key="review")
    assert spec.requester == Requester(login="Codertocat", id=21031067)
    assert "token" not in spec.to_bytes().decode().lower()


def test_not_covered_is_suppressed_for_a_trigger_and_refused_for_a_start(
    tree: Tree, envelope: dict[str, Any]
) -> None:
    agent = tree.agent(AGENT.replace("{{payload.github.pullRequest.number}}", "2"))
    suspended = connected(covering(status="suspended"))
    plan = plan_spawn(agent, fired(agent, envelope), suspended, created_at=NOW)
    assert isinstance(plan, Suppressed)
    assert plan.code == "repository_not_covered"
    assert plan.details == {"mountPath": "/workspace/hello", "repository": REPO}
    [cover] = plan.coverage
    assert cover.grant is None and "lists it but is suspended" in cover.why_not
    start = DirectStart("s-1", Origin(kind="manual"))
    refused = plan_spawn(agent, start, suspended, created_at=NOW)
    assert isinstance(refused, Refused)
    assert (refused.code, refused.details) == ("unauthorized_repository", plan.details)
    assert refused.message == plan.message and refused.mints == ()


def test_a_pinned_installation_is_the_only_one_used(tree: Tree, envelope: dict[str, Any]) -> None:
    agent = tree.agent(AGENT.replace("kind: githubApp,", "kind: githubApp, installationId: '8',"))
    both = connected(covering(7), covering(8))
    plan = plan_spawn(agent, fired(agent, envelope), both, created_at=NOW)
    assert isinstance(plan, Planned) and plan.mints[0].grant == Grant(8, 70)
    only_other = plan_spawn(agent, fired(agent, envelope), connected(covering(7)), created_at=NOW)
    assert isinstance(only_other, Suppressed)
    assert "pinned installation 8" in only_other.message
    assert "no connection for installation 8" in only_other.coverage[0].why_not


def test_an_app_installation_wins_over_a_manual_connection_whatever_the_ids(
    tree: Tree, envelope: dict[str, Any]
) -> None:
    agent = tree.agent(PLAIN)
    manual = Installation(id=0, account="Codertocat", repositories={9: REPO}, manual=True)
    start = DirectStart("s-1", Origin(kind="manual"))
    for app_id in (42, 7):
        both = connected(manual, covering(app_id))
        plan = plan_spawn(agent, start, both, created_at=NOW)
        assert isinstance(plan, Planned) and plan.mints[0].grant == Grant(app_id, 70)
        assert plan.spec.mounts[0].installation_id == app_id
    # a manual connection applies where nothing else covers
    alone = plan_spawn(agent, start, connected(manual), created_at=NOW)
    assert isinstance(alone, Planned) and alone.mints == ()
    assert alone.spec.mounts[0].installation_id == 0
    suspended = connected(manual, covering(42, status="suspended"))
    fallback = plan_spawn(agent, start, suspended, created_at=NOW)
    assert isinstance(fallback, Planned) and fallback.mints == ()
    assert fallback.spec.mounts[0].installation_id == 0
    # a manual connection under a real id (`connections add --installation 5`) is manual too
    numbered = Installation(id=5, account="Codertocat", repositories={9: REPO}, manual=True)
    later = plan_spawn(agent, start, connected(numbered, covering(42)), created_at=NOW)
    assert isinstance(later, Planned) and later.mints[0].grant == Grant(42, 70)


def test_a_ref_refusal_comes_before_any_mint(tree: Tree, envelope: dict[str, Any]) -> None:
    agent = tree.agent(AGENT.replace("pullRequest.number", "pullRequest.nothing"))
    plan = plan_spawn(agent, fired(agent, envelope), connected(covering()), created_at=NOW)
    assert isinstance(plan, Refused)
    assert plan.code == "unresolvable_ref" and plan.details["mountPath"] == "/workspace/hello"
    assert plan.mints == () and plan.refs is None


def test_a_text_refusal_keeps_the_mints_asked_before_it(
    tree: Tree, envelope: dict[str, Any]
) -> None:
    agent = tree.agent(PLAIN)  # a pull_request has no comment: the message cannot render
    plan = plan_spawn(agent, fired(agent, envelope), connected(covering()), created_at=NOW)
    assert isinstance(plan, Refused)
    assert plan.code == "unresolvable_text" and plan.details["field"] == "message"
    assert plan.refs == ("main",)
    assert [m.grant for m in plan.mints] == [Grant(7, 70)]


def test_a_direct_start_plans_its_given_texts_and_requester(tree: Tree) -> None:
    agent = tree.agent(PLAIN)
    origin = Origin(kind="agent", parent_session_id="hs-parent", depth=2)
    start = DirectStart("s-2", origin, ("title", None, "hello"), Requester(login="alice"))
    plan = plan_spawn(agent, start, connected(covering()), created_at=NOW)
    assert isinstance(plan, Planned)
    spec = plan.spec
    assert (spec.id, spec.display_title, spec.message) == ("s-2", "title", "hello")
    assert spec.input is None and spec.depth == 2
    assert spec.requester == Requester(login="alice")
    assert [m.grant for m in plan.mints] == [Grant(7, 70)]


def test_a_spawn_found_dispatched_is_planned_as_such_before_anything_else(
    tree: Tree, envelope: dict[str, Any]
) -> None:
    """The caller looks the spawn id up and hands the answer in: nothing else is decided."""
    agent = tree.agent(AGENT)
    start = fired(agent, envelope)
    session = spawn_id(agent, start)
    assert session == trigger_spawn_id(start.delivery_id, agent.name, start.trigger.key)
    plan = plan_spawn(agent, start, connected(), created_at=NOW, existing=session)
    assert plan == AlreadyDispatched(session, session)
    direct = DirectStart("s-9", Origin(kind="manual"), (None, None, None))
    assert spawn_id(agent, direct) == "s-9"
    again = plan_spawn(agent, direct, connected(), created_at=NOW, existing="s-9")
    assert again == AlreadyDispatched("s-9", "s-9")
    assert not isinstance(plan_spawn(agent, start, connected(), created_at=NOW), AlreadyDispatched)
