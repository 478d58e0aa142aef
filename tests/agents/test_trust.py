"""Triggers anyone can cause, on agents that can write: warned unless a filter limits who."""

from __future__ import annotations

import pytest

from agents import Diagnostic
from agents.regex_bound import compile_bounded
from agents.trust import OPEN_EVENTS, UNTRUSTED_ASSOCIATIONS
from tests.agents.conftest import Tree
from tests.agents.test_examples import agents as example_agents

WRITER = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w
    ref: main
    auth: {kind: githubApp, capabilities: CAPS}
triggers:
  - kind: github
    event: EVENT
    filters:
      - {path: github.comment.body, matches: "^/fix"}
FILTER
"""
ENV = "environment: {name: runtime, image: {kind: preset, name: node24}}\n"


def _warnings(
    tree: Tree, event: str = "issue_comment", filter_: str = "", caps: str = "{}"
) -> list[Diagnostic]:
    text = WRITER.replace("EVENT", event).replace("CAPS", caps)
    text = text.replace("FILTER\n", f"      - {filter_}\n" if filter_ else "")
    tree.write("agents/a.yaml", "name: a\nharness: claude-code\n" + ENV + text)
    result = tree.compile()
    assert result.errors == (), [str(e) for e in result.errors]
    return [w for w in result.warnings if "anyone can cause" in w.message]


@pytest.mark.parametrize("event", sorted(OPEN_EVENTS))
def test_an_open_event_on_a_writer_without_a_who_filter_warns(tree: Tree, event: str) -> None:
    (warning,) = _warnings(tree, event)
    assert (warning.file, warning.line, warning.path) == (".auto/agents/a.yaml", 11, "triggers.0")
    assert f"anyone can cause {event!r} events" in warning.message
    assert "/w (contents, pullRequests, issues: write)" in warning.message
    assert f"github.{OPEN_EVENTS[event]}.authorAssociation" in warning.message


@pytest.mark.parametrize(
    "filter_",
    [
        "{path: github.comment.authorAssociation, in: [OWNER, MEMBER, COLLABORATOR]}",
        "{path: github.comment.authorAssociation, matches: 'OWNER|MEMBER|COLLABORATOR'}",
        "{path: github.comment.authorAssociation, equals: OWNER}",
        "{path: github.issue.authorAssociation, in: [OWNER]}",
        "{path: github.sender.login, equals: octocat}",
        "{path: github.sender.login, in: [octocat, hubot]}",
        "{path: github.sender.id, equals: 1}",
    ],
)
def test_a_filter_on_who_silences_it(tree: Tree, filter_: str) -> None:
    assert _warnings(tree, filter_=filter_) == []


@pytest.mark.parametrize(
    "filter_",
    [
        "{path: github.comment.authorAssociation, exists: true}",
        "{path: github.comment.authorAssociation, matches: '.*'}",
        "{path: github.comment.authorAssociation, matches: 'OWNER|CONTRIBUTOR'}",
        "{path: github.comment.authorAssociation, in: [OWNER, NONE]}",
        "{path: github.comment.authorAssociation, equals: FIRST_TIMER}",
        "{path: github.sender.login, exists: true}",
        "{path: github.comment.user.login, equals: octocat}",
    ],
)
def test_a_filter_that_still_admits_strangers_does_not(tree: Tree, filter_: str) -> None:
    assert len(_warnings(tree, filter_=filter_)) == 1


def test_leaving_out_pull_requests_from_forks_limits_who(tree: Tree) -> None:
    no_forks = "{path: github.pullRequest.head.repo.fork, equals: false}"
    assert _warnings(tree, event="pull_request", filter_=no_forks) == []
    forks = "{path: github.pullRequest.head.repo.fork, equals: true}"
    assert len(_warnings(tree, event="pull_request", filter_=forks)) == 1


def test_no_warning_without_write_or_for_events_strangers_cannot_cause(tree: Tree) -> None:
    read_only = "{contents: read, pullRequests: read, issues: read}"
    assert _warnings(tree, caps=read_only) == []
    assert _warnings(tree, event="push") == []
    assert _warnings(tree, event="workflow_run") == []
    # a single write capability is enough to warn
    assert len(_warnings(tree, caps="{contents: read, pullRequests: read, issues: write}")) == 1


def test_a_mount_without_github_app_auth_writes_nothing(tree: Tree) -> None:
    text = WRITER.replace("    auth: {kind: githubApp, capabilities: CAPS}\n", "")
    text = text.replace("EVENT", "issue_comment").replace("FILTER\n", "")
    tree.write("agents/a.yaml", "name: a\nharness: claude-code\n" + ENV + text)
    result = tree.compile()
    assert result.ok and result.warnings == ()


def test_the_examples_limit_who_starts_their_writers() -> None:
    """(example_agents() also asserts the shipped set compiles without a warning.)"""
    found = example_agents()
    for name in ("fix-command", "pr-review"):
        (trigger,) = found[name].triggers
        (who,) = [f for f in trigger.filters if f.path.endswith(".authorAssociation")]
        assert who.op in ("in", "matches")
        admitted = [
            value
            for value in (*UNTRUSTED_ASSOCIATIONS, "OWNER", "MEMBER", "COLLABORATOR")
            if (value in who.value if who.op == "in" else compile_bounded(who.value).search(value))
        ]
        assert admitted == ["OWNER", "MEMBER", "COLLABORATOR"]
