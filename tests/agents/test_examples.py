"""The shipped examples: what each agent compiles to."""

from __future__ import annotations

from pathlib import Path

from agents import CompiledAgent, compile_dir
from agents.environment_spec import SecretRef

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / ".auto"


def agents() -> dict[str, CompiledAgent]:
    result = compile_dir(EXAMPLES, secret_names={"tailscale-authkey"})
    assert result.errors == () and result.warnings == ()
    assert list(result.environments) == ["agent-runtime"]
    return {agent.name: agent for agent in result.agents}


def test_pr_review_checks_out_the_pr_head_read_only() -> None:
    agent = agents()["pr-review"]
    assert agent.event_dependent
    (mount,) = agent.mounts
    assert mount.ref == "refs/pull/{{payload.github.pullRequest.number}}/head"
    assert mount.auth.capabilities.contents == "read"
    assert mount.auth.capabilities.git_permissions() == {"contents": "read", "metadata": "read"}
    (trigger,) = agent.triggers
    assert (trigger.event, trigger.actions) == (
        "pull_request",
        ("opened", "synchronize", "reopened", "ready_for_review"),
    )


def test_fix_command_fires_on_slash_fix_comments() -> None:
    agent = agents()["fix-command"]
    assert not agent.event_dependent
    (trigger,) = agent.triggers
    assert trigger.event == "issue_comment" and trigger.actions == ("created",)
    pattern = trigger.filters[0].pattern
    assert pattern is not None
    assert pattern.search("/fix the flaky test")
    assert not pattern.search("/fixup")


def test_nightly_agent_is_static_and_shares_the_runtime() -> None:
    found = agents()
    agent = found["nightly-deps"]
    assert not agent.event_dependent
    assert agent.mounts[0].ref == "main"
    assert agent.working_directory == "/workspace/widgets/packages/core"
    assert agent.env == {
        "TS_AUTHKEY": SecretRef(secret="tailscale-authkey", optional=True),
        "NODE_ENV": "development",
    }
    assert {a.environment for a in found.values()} == {"agent-runtime"}
