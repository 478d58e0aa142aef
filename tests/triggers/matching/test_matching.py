"""TriggerIndex on real GitHub deliveries: each condition fires and fails, with named details."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import compile_dir
from agents.model import CompiledAgent, Trigger
from tests.triggers.matching.conftest import DELETE, Load, agent, filter_, trigger
from triggers.envelope_values import event_branch, json_equal
from triggers.matching import Condition, Decision, TriggerIndex

REPO = "Codertocat/Hello-World"


def decide(
    load: Load, subject: CompiledAgent | Trigger, event: str, file: str, **kw: Any
) -> Decision:
    """The single decision of one trigger (or one agent's only trigger) on a recorded delivery."""
    target = subject if isinstance(subject, CompiledAgent) else agent("a", subject)
    decisions = TriggerIndex([target]).evaluate(load(event, file, kw.get("changes")))
    assert len(decisions) == 1, decisions
    return decisions[0]


def assert_fails(decision: Decision, condition: Condition, *fragments: str) -> None:
    assert decision.fires is False, decision
    assert decision.failed == condition, decision
    assert decision.detail is not None
    for fragment in fragments:
        assert fragment in decision.detail, (fragment, decision.detail)


def assert_fires(decision: Decision) -> None:
    assert decision.fires is True, decision
    assert decision.failed is None
    assert decision.detail is None


# ---------------------------------------------------------------- event and index


class TestIndex:
    def test_candidates_are_grouped_by_event_in_agent_then_trigger_order(self) -> None:
        a = agent("a", trigger("push", 0), trigger("pull_request", 1), trigger("pull_request", 2))
        b = agent("b", trigger("pull_request", 0))
        index = TriggerIndex([a, b])
        got = [(c.agent.name, c.trigger.index) for c in index.candidates("pull_request")]
        assert got == [("a", 1), ("a", 2), ("b", 0)]
        assert [c.agent.name for c in index.candidates("push")] == ["a"]
        assert index.candidates("issues") == ()
        assert index.events == {"push", "pull_request"}

    def test_evaluate_looks_only_at_the_event_s_triggers(self, load: Load) -> None:
        others = [agent(f"other-{i}", trigger("issues")) for i in range(500)]
        index = TriggerIndex([*others, agent("pr", trigger("pull_request"))])
        decisions = index.evaluate(load("pull_request", "opened.payload.json"))
        assert [(d.agent, d.fires) for d in decisions] == [("pr", True)]

    def test_match_returns_only_what_fires(self, load: Load) -> None:
        a = agent(
            "a",
            trigger("pull_request", 0, actions=["closed"]),
            trigger("pull_request", 1, actions=["opened"]),
        )
        fired = TriggerIndex([a]).match(load("pull_request", "opened.payload.json"))
        assert [(c.agent.name, c.trigger.index) for c in fired] == [("a", 1)]

    def test_an_event_nothing_listens_to_matches_nothing(self, load: Load) -> None:
        index = TriggerIndex([agent("a", trigger("push"))])
        envelope = load("pull_request", "opened.payload.json")
        assert index.match(envelope) == []
        assert index.evaluate(envelope) == []

    def test_an_envelope_without_event_matches_nothing(self) -> None:
        index = TriggerIndex([agent("a", trigger("push"))])
        assert index.match({"github": {"ref": "refs/heads/main"}}) == []
        assert index.match({}) == []
        [decision] = index.explain_all({})
        assert_fails(decision, "event", "no github.event")

    def test_explain_all_covers_every_trigger_of_every_agent(self, load: Load) -> None:
        a = agent("a", trigger("push", 0), trigger("pull_request", 1, actions=["closed"]))
        b = agent("b", trigger("pull_request", 0, name="review"))
        decisions = TriggerIndex([a, b]).explain_all(load("pull_request", "opened.payload.json"))
        assert [(d.agent, d.trigger, d.fires, d.failed) for d in decisions] == [
            ("a", 0, False, "event"),
            ("a", 1, False, "action"),
            ("b", 0, True, None),
        ]
        assert decisions[0].detail == "event 'pull_request' is not 'push'"
        assert decisions[2].key == "review"
        assert decisions[2].name == "review"

    def test_decision_json_is_camel_case_and_complete(self, load: Load) -> None:
        decision = decide(
            load,
            trigger("pull_request", 3, actions=["closed"]),
            "pull_request",
            "opened.payload.json",
        )
        assert decision.to_json() == {
            "agent": "a",
            "trigger": 3,
            "key": "key-pull_request-3",
            "name": None,
            "fires": False,
            "failed": "action",
            "detail": "action 'opened' is not one of closed",
        }


# ---------------------------------------------------------------- action


ACTIONS: list[tuple[tuple[str, ...] | None, str, str, bool]] = [
    (None, "pull_request", "closed.payload.json", True),
    (("opened", "synchronize"), "pull_request", "opened.payload.json", True),
    (("opened", "synchronize"), "pull_request", "synchronize.payload.json", True),
    (("opened", "synchronize"), "pull_request", "closed.payload.json", False),
    (("created",), "issue_comment", "created.payload.json", True),
    (("created",), "issue_comment", "edited.payload.json", False),
    (("created",), "push", "with-new-branch.payload.json", False),  # push has no action
    (None, "push", "with-new-branch.payload.json", True),
]


@pytest.mark.parametrize(("actions", "event", "file", "fires"), ACTIONS)
def test_action(
    load: Load, actions: tuple[str, ...] | None, event: str, file: str, fires: bool
) -> None:
    decision = decide(load, trigger(event, actions=actions), event, file)
    if fires:
        assert_fires(decision)
    else:
        assert_fails(decision, "action")


def test_action_detail_names_the_action_and_the_allowed_ones(load: Load) -> None:
    decision = decide(
        load,
        trigger("pull_request", actions=["opened", "synchronize"]),
        "pull_request",
        "closed.payload.json",
    )
    assert decision.detail == "action 'closed' is not one of opened, synchronize"


def test_event_without_action_names_the_wanted_ones(load: Load) -> None:
    decision = decide(load, trigger("push", actions=["created"]), "push", "payload.json")
    assert_fails(decision, "action", "has no action", "created")


# ---------------------------------------------------------------- repository


REPOSITORY_GLOBS: list[tuple[tuple[str, ...], bool]] = [
    (("Codertocat/Hello-World",), True),
    (("codertocat/hello-world",), True),  # case-insensitive
    (("CODERTOCAT/*",), True),
    (("codertocat/hello-*",), True),
    (("*/*",), True),
    (("**",), True),
    (("acme/*", "codertocat/*"), True),
    (("acme/*",), False),
    (("codertocat/hello",), False),
    (("codertocat/*/x",), False),
    ((), False),  # an empty list matches nothing
]


@pytest.mark.parametrize(("globs", "fires"), REPOSITORY_GLOBS)
def test_repository_globs(load: Load, globs: tuple[str, ...], fires: bool) -> None:
    decision = decide(
        load, trigger("pull_request", repositories=globs), "pull_request", "opened.payload.json"
    )
    if fires:
        assert_fires(decision)
    else:
        assert_fails(decision, "repository", f"'{REPO}'")


def test_repository_glob_detail_lists_the_globs(load: Load) -> None:
    decision = decide(
        load,
        trigger("pull_request", repositories=["acme/*", "octo/x"]),
        "pull_request",
        "opened.payload.json",
    )
    assert decision.detail == f"repository '{REPO}' matches none of acme/*, octo/x"


def test_explicit_globs_override_the_mount_default(load: Load) -> None:
    a = agent(
        "a", trigger("pull_request", repositories=["codertocat/*"]), repositories=("acme/widgets",)
    )
    assert_fires(decide(load, a, "pull_request", "opened.payload.json"))


MOUNT_DEFAULTS: list[tuple[tuple[str | None, ...], bool]] = [
    ((), True),  # no mounts: any repository
    ((None,), True),  # only a non-GitHub mount: any repository
    (("codertocat/hello-world",), True),  # case-insensitive exact
    (("acme/widgets", "Codertocat/Hello-World"), True),  # any of the mounts
    (("acme/widgets",), False),
    (("acme/widgets", None), False),
    (("codertocat/hello-world-2",), False),  # exact, not a prefix
]


@pytest.mark.parametrize(("mounts", "fires"), MOUNT_DEFAULTS)
def test_repository_default_is_the_agent_s_mounts(
    load: Load, mounts: tuple[str | None, ...], fires: bool
) -> None:
    a = agent("a", trigger("pull_request"), repositories=mounts)
    decision = decide(load, a, "pull_request", "opened.payload.json")
    if fires:
        assert_fires(decision)
    else:
        named = [m for m in mounts if m]
        assert_fails(decision, "repository", f"'{REPO}'", "mounted repositories", *named)


def test_event_without_repository_fails_only_when_a_rule_applies(load: Load) -> None:
    with_glob = trigger("installation", repositories=["*/*"])
    assert_fails(
        decide(load, with_glob, "installation", "created.payload.json"),
        "repository",
        "no repository",
    )
    mounted = agent("a", trigger("installation"), repositories=("acme/widgets",))
    assert_fails(
        decide(load, mounted, "installation", "created.payload.json"), "repository", "no repository"
    )
    assert_fires(decide(load, trigger("installation"), "installation", "created.payload.json"))


# ---------------------------------------------------------------- branch


BRANCHES: list[tuple[str, str, tuple[str, ...], dict[str, Any] | None, bool]] = [
    # pull_request*: the base branch
    ("pull_request", "opened.payload.json", ("master",), None, True),
    ("pull_request", "opened.payload.json", ("main",), None, False),
    (
        "pull_request",
        "opened.payload.json",
        ("release/*",),
        {"pull_request.base.ref": "release/1.2"},
        True,
    ),
    (
        "pull_request",
        "opened.payload.json",
        ("release/*",),
        {"pull_request.base.ref": "release/1/x"},
        False,
    ),
    (
        "pull_request",
        "opened.payload.json",
        ("release/**",),
        {"pull_request.base.ref": "release/1/x"},
        True,
    ),
    (
        "pull_request",
        "opened.payload.json",
        ("Master",),
        None,
        False,
    ),  # branches are case-sensitive
    ("pull_request_review", "submitted.payload.json", ("master",), None, True),
    ("pull_request_review_comment", "created.payload.json", ("master",), None, True),
    # push: refs/heads/<branch>; tags have no branch
    ("push", "with-new-branch.payload.json", ("master",), None, True),
    ("push", "with-new-branch.payload.json", ("main", "mas*"), None, True),
    ("push", "with-new-branch.payload.json", ("main",), None, False),
    ("push", "payload.json", ("*",), None, False),
    ("push", "payload.json", ("**",), None, False),
    # check runs and suites, workflow runs: the head branch
    ("check_run", "requested_action.payload.json", ("miniak/*",), None, True),
    ("check_run", "requested_action.payload.json", ("miniak",), None, False),
    ("check_suite", "completed.payload.json", ("changes",), None, True),
    (
        "check_suite",
        "completed.payload.json",
        ("changes",),
        {"check_suite.head_branch": None},
        False,
    ),
    ("workflow_run", "requested.payload.json", ("master",), None, True),
    ("workflow_job", "in_progress.payload.json", ("main",), None, True),
    # create/delete: only when a branch was created or deleted
    ("create", "payload.json", ("simple-tag",), None, False),
    ("create", "payload.json", ("feature/*",), {"ref": "feature/x", "ref_type": "branch"}, True),
    ("delete", "payload.json", ("feature/*",), {"ref": "feature/x", "ref_type": "branch"}, True),
    # merge_group: the branch being merged into
    ("merge_group", "checks_requested.payload.json", ("main",), None, True),
    ("merge_group", "checks_requested.payload.json", ("gh-readonly-queue/**",), None, False),
    # events about no branch
    ("issue_comment", "created.payload.json", ("**",), None, False),
    ("issues", "opened.payload.json", ("**",), None, False),
]


@pytest.mark.parametrize(("event", "file", "globs", "changes", "fires"), BRANCHES)
def test_branch(
    load: Load,
    event: str,
    file: str,
    globs: tuple[str, ...],
    changes: dict[str, Any] | None,
    fires: bool,
) -> None:
    decision = decide(load, trigger(event, branches=globs), event, file, changes=changes)
    if fires:
        assert_fires(decision)
    else:
        assert_fails(decision, "branch")


def test_branch_details(load: Load) -> None:
    pr = decide(
        load,
        trigger("pull_request", branches=["main", "release/*"]),
        "pull_request",
        "opened.payload.json",
    )
    assert pr.detail == (
        "branch 'master' (github.pullRequest.base.ref) matches none of main, release/*"
    )
    tag = decide(load, trigger("push", branches=["*"]), "push", "payload.json")
    assert (
        tag.detail == 'the event has no branch: github.ref "refs/tags/simple-tag" is not a branch'
    )
    comment = decide(
        load, trigger("issue_comment", branches=["*"]), "issue_comment", "created.payload.json"
    )
    assert comment.detail == "the event has no branch: github.ref is missing"
    created = decide(load, trigger("create", branches=["*"]), "create", "payload.json")
    assert created.detail == 'the event has no branch: github.refType is "tag", not branch'


def test_event_branch_reports_where_it_looked() -> None:
    assert event_branch({"event": "push", "ref": "refs/heads/a/b"}) == ("a/b", "github.ref")
    assert event_branch({"event": "push", "ref": "refs/heads/"})[0] is None
    assert event_branch({"event": "workflow_dispatch", "ref": "refs/heads/main"})[0] == "main"
    assert event_branch({"event": "status", "branches": [{"name": "main"}]})[0] is None
    assert event_branch({"event": "pull_request", "pullRequest": {"base": {"ref": 7}}}) == (
        None,
        "github.pullRequest.base.ref is 7",
    )


# ---------------------------------------------------------------- bots


BOT = {"sender.type": "Bot", "sender.login": "hookspawn[bot]"}


def test_a_bot_comment_does_not_fire_unless_bots_is_true(load: Load) -> None:
    quiet = decide(
        load,
        trigger("issue_comment", actions=["created"]),
        "issue_comment",
        "created.payload.json",
        changes=BOT,
    )
    assert_fails(quiet, "bots", '"hookspawn[bot]"', "bots: true")
    loud = decide(
        load,
        trigger("issue_comment", actions=["created"], bots=True),
        "issue_comment",
        "created.payload.json",
        changes=BOT,
    )
    assert_fires(loud)


def test_a_user_comment_fires_either_way(load: Load) -> None:
    for bots in (False, True):
        assert_fires(
            decide(
                load, trigger("issue_comment", bots=bots), "issue_comment", "created.payload.json"
            )
        )


def test_a_recorded_bot_delivery_needs_bots_true(load: Load) -> None:
    # check_suite/rerequested was sent by octocoders-linter[bot]
    assert_fails(
        decide(load, trigger("check_suite"), "check_suite", "rerequested.payload.json"),
        "bots",
        "octocoders-linter[bot]",
    )
    assert_fires(
        decide(load, trigger("check_suite", bots=True), "check_suite", "rerequested.payload.json")
    )


def test_an_organization_sender_is_not_a_bot(load: Load) -> None:
    changes = {"sender.type": "Organization"}
    assert_fires(
        decide(
            load, trigger("issue_comment"), "issue_comment", "created.payload.json", changes=changes
        )
    )


# ---------------------------------------------------------------- filters


FILTERS: list[tuple[str, str, Any, str, str, dict[str, Any] | None, bool]] = [
    # equals: strict JSON equality
    (
        "github.pullRequest.draft",
        "equals",
        False,
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    (
        "github.pullRequest.draft",
        "equals",
        True,
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    ("github.pullRequest.draft", "equals", 0, "pull_request", "opened.payload.json", None, False),
    (
        "github.pullRequest.draft",
        "equals",
        "false",
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.additions",
        "equals",
        1,
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    (
        "github.pullRequest.additions",
        "equals",
        1.0,
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    (
        "github.pullRequest.additions",
        "equals",
        "1",
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.additions",
        "equals",
        True,
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    ("github.number", "equals", 2, "pull_request", "labeled.payload.json", None, True),
    (
        "github.pullRequest.body",
        "equals",
        None,
        "pull_request",
        "opened.with-null-body.json",
        None,
        True,
    ),
    ("github.pullRequest.nope", "equals", None, "pull_request", "opened.payload.json", None, False),
    (
        "github.pullRequest.labels.0.name",
        "equals",
        "bug",
        "pull_request",
        "labeled.payload.json",
        None,
        True,
    ),
    (
        "github.pullRequest.labels.1.name",
        "equals",
        "bug",
        "pull_request",
        "labeled.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.labels.x",
        "equals",
        "bug",
        "pull_request",
        "labeled.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.base.repo.owner",
        "equals",
        {"login": "Codertocat"},
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.requestedTeams",
        "equals",
        [],
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    # in
    (
        "github.comment.user.type",
        "in",
        ["User", "Organization"],
        "issue_comment",
        "created.payload.json",
        None,
        True,
    ),
    (
        "github.comment.user.type",
        "in",
        ["Bot"],
        "issue_comment",
        "created.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.additions",
        "in",
        [1.0, 2],
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    (
        "github.pullRequest.draft",
        "in",
        [0, "false"],
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.milestone",
        "in",
        [None],
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    # matches: regex search on strings
    (
        "github.comment.body",
        "matches",
        r"^You are",
        "issue_comment",
        "created.payload.json",
        None,
        True,
    ),
    (
        "github.comment.body",
        "matches",
        r"right away\.$",
        "issue_comment",
        "created.payload.json",
        None,
        True,
    ),
    (
        "github.comment.body",
        "matches",
        r"^/review\b",
        "issue_comment",
        "created.payload.json",
        None,
        False,
    ),
    (
        "github.comment.body",
        "matches",
        r"^/review\b",
        "issue_comment",
        "created.payload.json",
        {"comment.body": "/review please"},
        True,
    ),
    (
        "github.comment.body",
        "matches",
        r"(?i)TOTALLY",
        "issue_comment",
        "created.payload.json",
        None,
        True,
    ),
    ("github.issue.number", "matches", r"\d", "issue_comment", "created.payload.json", None, False),
    ("github.comment.nope", "matches", r".*", "issue_comment", "created.payload.json", None, False),
    # exists: present and not null
    (
        "github.pullRequest.closedAt",
        "exists",
        True,
        "pull_request",
        "closed.payload.json",
        None,
        True,
    ),
    (
        "github.pullRequest.mergedAt",
        "exists",
        True,
        "pull_request",
        "opened.payload.json",
        None,
        False,
    ),
    (
        "github.pullRequest.mergedAt",
        "exists",
        False,
        "pull_request",
        "opened.payload.json",
        None,
        True,
    ),
    ("github.pullRequest.nope", "exists", False, "pull_request", "opened.payload.json", None, True),
    ("github.pullRequest.nope", "exists", True, "pull_request", "opened.payload.json", None, False),
    ("github.pullRequest.draft", "exists", True, "pull_request", "opened.payload.json", None, True),
    (
        "github.issue.pullRequest",
        "exists",
        False,
        "issue_comment",
        "created.payload.json",
        None,
        True,
    ),
]


@pytest.mark.parametrize(("path", "op", "value", "event", "file", "changes", "fires"), FILTERS)
def test_filter(
    load: Load,
    path: str,
    op: Any,
    value: Any,
    event: str,
    file: str,
    changes: dict[str, Any] | None,
    fires: bool,
) -> None:
    decision = decide(
        load, trigger(event, filters=(filter_(path, op, value),)), event, file, changes=changes
    )
    if fires:
        assert_fires(decision)
    else:
        assert_fails(decision, "filter", path)


def test_all_filters_must_hold_and_the_first_failure_is_named(load: Load) -> None:
    filters = (
        filter_("github.pullRequest.draft", "equals", False),
        filter_("github.pullRequest.state", "equals", "closed"),
        filter_("github.pullRequest.locked", "equals", True),
    )
    decision = decide(
        load, trigger("pull_request", filters=filters), "pull_request", "opened.payload.json"
    )
    assert decision.detail == (
        'filter 1: github.pullRequest.state equals "closed", actual value "open"'
    )


def test_filter_details_show_expected_and_actual_values(load: Load) -> None:
    missing = decide(
        load,
        trigger("pull_request", filters=(filter_("github.pullRequest.nope", "exists", True),)),
        "pull_request",
        "opened.payload.json",
    )
    assert missing.detail == "filter 0: github.pullRequest.nope exists true, actual value missing"
    listed = decide(
        load,
        trigger("pull_request", filters=(filter_("github.pullRequest.draft", "in", [0, "false"]),)),
        "pull_request",
        "opened.payload.json",
    )
    assert listed.detail == 'filter 0: github.pullRequest.draft in [0, "false"], actual value false'


def test_a_long_actual_value_is_clipped_in_the_detail(load: Load) -> None:
    body = "x" * 100_000
    decision = decide(
        load,
        trigger("issue_comment", filters=(filter_("github.comment.body", "equals", "short"),)),
        "issue_comment",
        "created.payload.json",
        changes={"comment.body": body},
    )
    assert decision.detail is not None
    assert len(decision.detail) < 200
    assert decision.detail.endswith('…"')


def test_a_pattern_the_bounded_engine_refuses_fails_its_filter(load: Load) -> None:
    # The compiler accepts it with Python's re today; matching fails closed with the reason.
    decision = decide(
        load,
        trigger(
            "issue_comment", filters=(filter_("github.comment.body", "matches", r"(You) are \1"),)
        ),
        "issue_comment",
        "created.payload.json",
    )
    assert_fails(decision, "filter", "github.comment.body", "backreferences")


@pytest.mark.timeout(60)
def test_a_hostile_pattern_on_a_25_mb_comment_returns(load: Load) -> None:
    body = "a" * (25 * 1024 * 1024) + "!"
    hostile = trigger(
        "issue_comment", filters=(filter_("github.comment.body", "matches", "(a+)+$"),)
    )
    decision = decide(
        load, hostile, "issue_comment", "created.payload.json", changes={"comment.body": body}
    )
    assert_fails(decision, "filter", "github.comment.body", "(a+)+$")


def test_filters_run_after_the_other_conditions(load: Load) -> None:
    t = trigger(
        "pull_request",
        actions=["closed"],
        filters=(filter_("github.pullRequest.nope", "exists", True),),
    )
    assert decide(load, t, "pull_request", "opened.payload.json").failed == "action"


def test_failing_conditions_come_in_the_documented_order(load: Load) -> None:
    everything_wrong = trigger(
        "pull_request",
        actions=["closed"],
        repositories=["acme/*"],
        branches=["main"],
        filters=(filter_("github.pullRequest.draft", "equals", True),),
    )
    changes: dict[str, Any] = {"sender.type": "Bot"}
    steps: list[tuple[Condition, dict[str, Any]]] = [
        ("action", {}),
        ("repository", {"action": "closed"}),
        ("branch", {"repository.full_name": "acme/x"}),
        ("bots", {"pull_request.base.ref": "main"}),
        ("filter", {"sender.type": "User"}),
    ]
    for condition, fix in steps:
        changes.update(fix)
        decision = decide(
            load, everything_wrong, "pull_request", "opened.payload.json", changes=changes
        )
        assert decision.failed == condition, (condition, decision)
    changes["pull_request.draft"] = True
    assert_fires(
        decide(load, everything_wrong, "pull_request", "opened.payload.json", changes=changes)
    )


def test_a_deleted_field_is_missing_not_null(load: Load) -> None:
    t = trigger("pull_request", filters=(filter_("github.pullRequest.body", "exists", False),))
    assert_fires(
        decide(
            load, t, "pull_request", "opened.payload.json", changes={"pull_request.body": DELETE}
        )
    )


# ---------------------------------------------------------------- strict JSON equality


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (0, -0.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ("1", 1, False),
        (None, None, True),
        (None, False, False),
        ("", None, False),
        ([1, "a"], [1.0, "a"], True),
        ([1, 2], [2, 1], False),
        ([True], [1], False),
        ({"a": 1, "b": [None]}, {"b": [None], "a": 1.0}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": True}, {"a": 1}, False),
        ([], {}, False),
    ],
)
def test_json_equal(left: Any, right: Any, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal


# ---------------------------------------------------------------- through the real compiler


def test_compiled_examples_match_real_deliveries(load: Load) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / ".auto"
    result = compile_dir(examples)
    assert result.ok, [str(e) for e in result.errors]
    index = TriggerIndex(result.agents)
    widgets = {"repository.full_name": "acme/widgets"}

    opened = load("pull_request", "opened.payload.json", widgets)
    assert [(c.agent.name, c.trigger.key) for c in index.match(opened)] == [("pr-review", "review")]
    # pr-review lists no repositories: the default is its mount's repository
    [elsewhere] = index.evaluate(load("pull_request", "opened.payload.json"))
    assert_fails(elsewhere, "repository", "acme/widgets")
    closed = load("pull_request", "closed.payload.json", widgets)
    [decision] = index.evaluate(closed)
    assert decision.failed == "action"

    fix = load("issue_comment", "created.payload.json", {**widgets, "comment.body": "/fix it"})
    assert [c.agent.name for c in index.match(fix)] == ["fix-command"]
    bot_fix = load(
        "issue_comment", "created.payload.json", {**widgets, "comment.body": "/fix it", **BOT}
    )
    [decision] = index.evaluate(bot_fix)
    assert decision.failed == "bots"

    push = load("push", "with-new-branch.payload.json", {**widgets, "ref": "refs/heads/main"})
    assert [c.agent.name for c in index.match(push)] == ["nightly-deps"]
    explained = index.explain_all(push)
    assert len(explained) == sum(len(a.triggers) for a in result.agents)
    assert [d.agent for d in explained if d.fires] == ["nightly-deps"]


# ---------------------------------------------------------------- odd input


def test_odd_payload_shapes_fail_cleanly(load: Load) -> None:
    t = trigger("pull_request", actions=["opened"], repositories=["*/*"])
    odd_action = decide(load, t, "pull_request", "opened.payload.json", changes={"action": []})
    assert_fails(odd_action, "action", "has no action")
    odd_repo = decide(
        load, t, "pull_request", "opened.payload.json", changes={"repository.full_name": 7}
    )
    assert_fails(odd_repo, "repository", "fullName is 7")
    odd_sender = decide(
        load,
        trigger("pull_request"),
        "pull_request",
        "opened.payload.json",
        changes={"sender": ["Bot"]},
    )
    assert_fires(odd_sender)


def test_a_glob_this_module_refuses_fails_its_condition_closed(load: Load) -> None:
    repo = decide(
        load, trigger("pull_request", repositories=["a**/b"]), "pull_request", "opened.payload.json"
    )
    assert_fails(repo, "repository", "** must be a whole path segment")
    branch = decide(
        load, trigger("pull_request", branches=["x//y"]), "pull_request", "opened.payload.json"
    )
    assert_fails(branch, "branch", "empty path segment")
