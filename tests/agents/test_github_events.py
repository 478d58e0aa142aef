"""The compiler's list of webhook event names is githubkit's, and a trigger on another name is
an error naming the file, the trigger and the name (with the closest known one)."""

from __future__ import annotations

from agents.github_events import GITHUB_EVENTS
from hookspawn.cli.check.event_schemas import EventSchemas
from tests.agents.conftest import ENV, Tree


def test_the_list_is_githubkits_event_names() -> None:
    known = EventSchemas().modelled_events
    assert sorted(known - GITHUB_EVENTS) == [], "add these to agents/github_events.py"
    assert sorted(GITHUB_EVENTS - known) == [], "remove these from agents/github_events.py"


def test_an_unknown_event_is_an_error_with_the_closest_name(tree: Tree) -> None:
    (error,) = tree.errors(
        """
        triggers:
          - event: push
          - name: reviews
            event: pull_requests
        """
    )
    assert (error.file, error.line, error.path) == (".auto/agents/a.yaml", 10, "triggers.1.event")
    assert error.message == (
        "unknown GitHub webhook event 'pull_requests' (did you mean 'pull_request'?)"
    )


def test_a_name_close_to_none_says_what_an_event_name_is(tree: Tree) -> None:
    (error,) = tree.errors("triggers:\n  - event: deploy_everything\n")
    assert error.path == "triggers.0.event"
    assert "'deploy_everything' (an X-GitHub-Event name such as pull_request)" in error.message


def test_every_known_event_compiles(tree: Tree) -> None:
    triggers = "".join(f"  - event: {name}\n" for name in sorted(GITHUB_EVENTS))
    tree.write("agents/a.yaml", "name: a\nharness: claude-code\n" + ENV + "triggers:\n" + triggers)
    result = tree.compile()
    assert result.errors == (), [str(e) for e in result.errors]
    agent = result.agent("a")
    assert agent is not None
    assert {t.event for t in agent.triggers} == GITHUB_EVENTS
