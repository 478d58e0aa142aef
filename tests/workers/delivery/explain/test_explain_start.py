"""explain_start: a manual or agent start explained with the very plan the pipeline executes,
its refusals included (the direct-start checks live in the pure plan, triggers.spawn_plan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import CompiledAgent
from tests.agents.conftest import Tree
from tests.workers.delivery.pipeline.test_spawn_plan import (
    AGENT,
    NOW,
    PLAIN,
    REPO,
    connected,
    covering,
)
from triggers.matching import TriggerIndex
from triggers.session.spec import Origin
from triggers.spawn_plan import DirectStart, Planned, Refused, plan_start, startable
from triggers.spawn_rules import MAX_SPAWN_DEPTH, manual_spawn_id
from workers.agents_source import AgentSet
from workers.delivery.explain import DEFAULT_DELIVERY_ID, explain_start


@pytest.fixture
def agents(tmp_path: Path) -> AgentSet:
    tree = Tree(tmp_path / ".auto")
    tree.agent(AGENT, name="reviewer")  # its ref needs an event payload
    tree.agent(PLAIN, name="plain")
    result = tree.compile()
    return AgentSet(result, TriggerIndex(result.agents))


def test_a_manual_start_of_an_event_bound_agent_is_explained_as_refused(
    agents: AgentSet,
) -> None:
    view = explain_start("reviewer", agents=agents, coverage=connected(covering()))
    plan = view["plan"]
    assert (view["agent"], view["start"]) == ("reviewer", "manual")
    assert (plan["outcome"], plan["code"]) == ("refused", "event_required")
    assert "must be started by a matching event trigger" in plan["message"]
    assert plan["details"]["mountPath"] == "/workspace/hello"
    assert plan["sessionId"] == manual_spawn_id("reviewer", DEFAULT_DELIVERY_ID)


def test_an_unknown_agent_and_a_too_deep_chain_are_explained(agents: AgentSet) -> None:
    missing = explain_start("nobody", agents=agents, coverage=connected())["plan"]
    assert (missing["outcome"], missing["code"]) == ("refused", "agent_not_found")
    assert missing["message"] == "no agent named 'nobody'"
    deep = Origin(kind="agent", parent_session_id="hs-p", depth=MAX_SPAWN_DEPTH + 1)
    view = explain_start("plain", agents=agents, coverage=connected(), origin=deep)
    assert view["start"] == "agent"
    assert view["plan"]["code"] == "spawn_depth_exceeded"
    assert view["plan"]["details"] == {"depth": MAX_SPAWN_DEPTH + 1, "limit": MAX_SPAWN_DEPTH}
    assert "session hs-p is at depth 5" in view["plan"]["message"]


def test_a_startable_agent_is_explained_with_its_coverage(agents: AgentSet) -> None:
    view = explain_start(
        "plain", agents=agents, coverage=connected(covering()), texts=("t", None, "hi")
    )
    plan = view["plan"]
    assert (plan["outcome"], plan["code"]) == ("dispatched", None)
    assert plan["texts"] == {"displayTitle": "t", "initialPrompt": None, "message": "hi"}
    [cover] = plan["coverage"]
    assert (cover["repository"], cover["installationId"], cover["covered"]) == (REPO, 7, True)
    assert view["notes"] == ["no GitHub App is configured: no installation token would be minted"]
    uncovered = explain_start("plain", agents=agents, coverage=connected(), minting=True)
    assert uncovered["plan"]["code"] == "unauthorized_repository"
    assert uncovered["notes"] == []


def test_an_earlier_dispatch_is_looked_up_only_for_a_given_key(agents: AgentSet) -> None:
    seen: list[str] = []

    def dispatched(session_id: str) -> str | None:
        seen.append(session_id)
        return session_id

    view = explain_start(
        "plain", agents=agents, coverage=connected(), dispatched=dispatched, idempotency_key="k"
    )
    assert view["plan"]["alreadyDispatched"] == manual_spawn_id("plain", "k")
    assert "already dispatched for this start" in view["plan"]["message"]
    assert seen == [manual_spawn_id("plain", "k")]
    explain_start("plain", agents=agents, coverage=connected(), dispatched=dispatched)
    assert seen == [manual_spawn_id("plain", "k")]


def test_the_checks_come_in_the_order_the_starts_apply_them(agents: AgentSet) -> None:
    reviewer = agents.agent("reviewer")
    plain = agents.agent("plain")
    assert isinstance(reviewer, CompiledAgent) and isinstance(plain, CompiledAgent)
    deep = DirectStart("s", Origin(kind="agent", parent_session_id="p", depth=6))
    manual = DirectStart("s", Origin(kind="manual"))
    assert isinstance(refused := startable("x", None, deep), Refused)
    assert refused.code == "spawn_depth_exceeded"  # before agent_not_found
    assert isinstance(refused := startable("x", None, manual), Refused)
    assert refused.code == "agent_not_found"
    assert isinstance(refused := startable("reviewer", reviewer, manual), Refused)
    assert refused.code == "event_required"
    assert startable("plain", plain, manual) is plain
    planned = plan_start("plain", plain, manual, connected(covering()), created_at=NOW)
    assert isinstance(planned, Planned) and planned.spec.created_at == NOW
