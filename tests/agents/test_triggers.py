"""Trigger rules: fields, globs, filters, text templates and stable keys."""

from __future__ import annotations

import re

import pytest

from agents.triggerdefs import trigger_key
from tests.agents.conftest import Tree, find

FULL = """\
triggers:
  - kind: github
    name: review
    event: pull_request
    actions: [opened, synchronize]
    repositories: ["acme/*", "**"]
    branches: [main, "release/**"]
    filters:
      - {path: github.pullRequest.draft, equals: false}
      - {path: github.pullRequest.base.ref, in: [main, dev]}
      - {path: github.comment.body, matches: "^/review\\\\b"}
      - {path: github.pullRequest.mergedBy, exists: false}
    bots: true
    displayTitle: "Review #{{ github.pullRequest.number }}"
    initialPrompt: "Review {{ github.pullRequest.htmlUrl }}"
    message: plain text
"""


def test_full_trigger(tree: Tree) -> None:
    (trigger,) = tree.agent(FULL).triggers
    assert trigger.index == 0
    assert trigger.key == "review"
    assert trigger.kind == "github"
    assert trigger.event == "pull_request"
    assert trigger.actions == ("opened", "synchronize")
    assert trigger.repositories == ("acme/*", "**")
    assert trigger.branches == ("main", "release/**")
    assert trigger.bots is True
    ops = [(f.path, f.op, f.value) for f in trigger.filters]
    assert ops == [
        ("github.pullRequest.draft", "equals", False),
        ("github.pullRequest.base.ref", "in", ["main", "dev"]),
        ("github.comment.body", "matches", "^/review\\b"),
        ("github.pullRequest.mergedBy", "exists", False),
    ]
    pattern = trigger.filters[2].pattern
    assert isinstance(pattern, re.Pattern) and pattern.search("/review now")
    assert trigger.display_title is not None
    assert trigger.display_title.tokens[0].path == ("github", "pullRequest", "number")
    assert trigger.message is not None and trigger.message.source == "plain text"
    body = trigger.to_json()
    assert body["displayTitle"] == "Review #{{ github.pullRequest.number }}"
    assert body["filters"][2] == {"path": "github.comment.body", "matches": "^/review\\b"}


def test_defaults(tree: Tree) -> None:
    (trigger,) = tree.agent("triggers:\n  - {kind: github, event: push}\n").triggers
    assert trigger.actions is None and trigger.repositories is None and trigger.branches is None
    assert trigger.filters == () and trigger.name is None and trigger.bots is False
    assert trigger.display_title is None
    assert re.fullmatch(r"[0-9a-f]{16}", trigger.key)
    assert trigger.key == trigger_key(trigger.definition())


def test_unnamed_trigger_key_survives_edits_to_other_triggers(tree: Tree) -> None:
    one = "  - {kind: github, event: push, branches: [main]}\n"
    first = tree.agent("triggers:\n" + one + "  - {kind: github, event: issues}\n").triggers
    second = tree.agent("triggers:\n  - {kind: github, event: release, name: rel}\n" + one).triggers
    assert first[0].key == second[1].key
    assert second[1].index == 1
    assert first[1].key != first[0].key
    # Authoring a default explicitly does not change the key either.
    third = tree.agent(
        "triggers:\n  - {kind: github, event: push, branches: [main], bots: false}\n"
    ).triggers
    assert third[0].key == first[0].key


NEGATIVE = [
    ("  - {kind: gitlab, event: push}\n", "triggers.0.kind", "must be one of github"),
    ("  - {kind: github}\n", "triggers.0.event", "required field"),
    ("  - {kind: github, event: push, actions: []}\n", "triggers.0.actions", "at least one"),
    ("  - {kind: github, event: push, branches: []}\n", "triggers.0.branches", "at least one"),
    (
        "  - {kind: github, event: push, repositories: []}\n",
        "triggers.0.repositories",
        "at least one",
    ),
    ("  - {kind: github, event: Pull Request}\n", "triggers.0.event", "is not valid"),
    (
        "  - {kind: github, event: push,\n"
        "     filters: [{path: github.ref, matches: '(?s)(.*.){500}'}]}\n",
        "triggers.0.filters.0.matches",
        "its RE2 program has 4503 instructions, more than the 3000 a filter may cost",
    ),
    ("  - {kind: github, event: push, actions: opened}\n", "triggers.0.actions", "list of strings"),
    (
        "  - {kind: github, event: push, actions: [Opened!]}\n",
        "triggers.0.actions.0",
        "is not valid",
    ),
    (
        "  - {kind: github, event: push, repositories: [acme]}\n",
        "triggers.0.repositories.0",
        "owner/name",
    ),
    (
        "  - {kind: github, event: push, repositories: ['ac**me/x']}\n",
        "triggers.0.repositories.0",
        "whole path segment",
    ),
    (
        "  - {kind: github, event: push, repositories: ['acme//x']}\n",
        "triggers.0.repositories.0",
        "empty path segment",
    ),
    (
        "  - {kind: github, event: push, repositories: ['acme/w$x']}\n",
        "triggers.0.repositories.0",
        "cannot have",
    ),
    (
        "  - {kind: github, event: push, branches: [refs/heads/main]}\n",
        "triggers.0.branches.0",
        "without refs/heads/",
    ),
    ("  - {kind: github, event: push, branches: ['a b']}\n", "triggers.0.branches.0", "whitespace"),
    (
        "  - {kind: github, event: push, branches: ['rel**']}\n",
        "triggers.0.branches.0",
        "whole path segment",
    ),
    (
        "  - {kind: github, event: push, filters: {path: x}}\n",
        "triggers.0.filters",
        "list of filters",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x}]}\n",
        "triggers.0.filters.0",
        "exactly one of",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, equals: 1, exists: true}]}\n",
        "triggers.0.filters.0",
        "exactly one of",
    ),
    (
        "  - {kind: github, event: push, filters: [{equals: 1}]}\n",
        "triggers.0.filters.0.path",
        "required field",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: payload.github.x, equals: 1}]}\n",
        "triggers.0.filters.0.path",
        "starting at github",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, matches: '('}]}\n",
        "triggers.0.filters.0.matches",
        "invalid regular expression",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, matches: '"
        + "a" * 1001
        + "'}]}\n",
        "triggers.0.filters.0.matches",
        "longer than 1000",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, matches: 3}]}\n",
        "triggers.0.filters.0.matches",
        "must be a string",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, in: main}]}\n",
        "triggers.0.filters.0.in",
        "list of values",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, exists: 'yes'}]}\n",
        "triggers.0.filters.0.exists",
        "true or false",
    ),
    (
        "  - {kind: github, event: push, filters: [{path: github.x, equals: 1, op: eq}]}\n",
        "triggers.0.filters.0.op",
        "unknown key",
    ),
    ("  - {kind: github, event: push, name: 'a b'}\n", "triggers.0.name", "is not valid"),
    ("  - {kind: github, event: push, bots: 'true'}\n", "triggers.0.bots", "true or false"),
    ("  - {kind: github, event: push, when: always}\n", "triggers.0.when", "unknown key"),
    (
        "  - {kind: github, event: push, displayTitle: '{{ payload.github.x }}'}\n",
        "triggers.0.displayTitle",
        "template error",
    ),
    (
        "  - {kind: github, event: push, initialPrompt: '{{ github.x | upper }}'}\n",
        "triggers.0.initialPrompt",
        "template error",
    ),
    (
        "  - {kind: github, event: push, message: '{{ github.__class__ }}'}\n",
        "triggers.0.message",
        "template error",
    ),
    ("  - {kind: github, event: push, message: [a]}\n", "triggers.0.message", "must be a string"),
    (
        "  - {kind: github, event: push, name: x}\n  - {kind: github, event: issues, name: x}\n",
        "triggers.1",
        "same name 'x'",
    ),
    (
        "  - {kind: github, event: push}\n  - {kind: github, event: push}\n",
        "triggers.1",
        "same definition",
    ),
    ("  - push\n", "triggers.0", "expected a mapping"),
]


@pytest.mark.parametrize(("items", "path", "fragment"), NEGATIVE)
def test_trigger_rule_violations(tree: Tree, items: str, path: str, fragment: str) -> None:
    find(tree.errors("triggers:\n" + items), path, fragment)


def test_triggers_must_be_a_list(tree: Tree) -> None:
    find(tree.errors("triggers: {kind: github}\n"), "triggers", "must be a list")


def test_template_error_points_at_the_token_line_in_a_block_scalar(tree: Tree) -> None:
    errors = tree.errors(
        """\
triggers:
  - kind: github
    event: issue_comment
    initialPrompt: |
      First line is fine: {{ github.comment.body }}
      Second line is not: {{ github.comment.body | trim }}
"""
    )
    error = find(errors, "triggers.0.initialPrompt", "template error")
    # BASE has 5 lines; the bad token is on the 11th line of the file.
    assert (error.file, error.line) == (".auto/agents/a.yaml", 11)
    assert "{{ github.comment.body | trim }}" in error.message


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("(a)\\1", "backreferences"),
        ("a(?=b)", "lookaround"),
        ("[z-a]", "invalid regular expression"),
    ],
)
def test_patterns_are_judged_by_the_matchers_engine(
    tree: Tree, pattern: str, fragment: str
) -> None:
    errors = tree.errors(
        "triggers:\n  - kind: github\n    event: push\n"
        f"    filters: [{{path: github.x, matches: '{pattern}'}}]\n"
    )
    find(errors, "triggers.0.filters.0.matches", fragment)


def test_re2_only_syntax_is_accepted_and_globs_take_question_marks(tree: Tree) -> None:
    (trigger,) = tree.agent(
        "triggers:\n  - kind: github\n    event: push\n"
        "    repositories: ['acme/w?dget']\n    branches: ['v?/**']\n"
        "    filters: [{path: github.x, matches: '^\\pL+\\z'}]\n"
    ).triggers
    (only,) = trigger.filters
    assert only.value == "^\\pL+\\z"
    assert only.pattern is None  # Python's re has no \pL; the matcher compiles RE2 itself
    assert trigger.repositories == ("acme/w?dget",)
    assert trigger.branches == ("v?/**",)


def test_kind_defaults_to_github_and_keeps_the_key(tree: Tree) -> None:
    implicit = tree.agent("triggers:\n  - {event: push}\n").triggers
    explicit = tree.agent("triggers:\n  - {kind: github, event: push}\n").triggers
    assert implicit[0].kind == "github"
    assert implicit[0].key == explicit[0].key
