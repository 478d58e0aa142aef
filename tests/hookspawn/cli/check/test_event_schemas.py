"""`hookspawn check` against GitHub's webhook schemas: template, ref and filter paths, events,
actions and branches, `--strict`, lines in files and imports, laziness and speed."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from agents import Diagnostic, compile_dir
from hookspawn.cli import main
from hookspawn.cli.check.event_checks import branch_sources, check_agents, check_event_paths
from hookspawn.cli.check.event_schemas import EventSchemas
from hookspawn.cli.check.report import run_check
from tests.agents.conftest import BASE, Tree


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    monkeypatch.chdir(tmp_path)  # `check` names files as they open from here: .auto/...
    return Tree(tmp_path / ".auto")


def diagnose(tree: Tree, text: str) -> list[Diagnostic]:
    """Write agent `a` (BASE + text), compile it cleanly and run the schema check."""
    tree.write("agents/a.yaml", BASE + textwrap.dedent(text))
    result = compile_dir(tree.root)
    assert result.ok, [str(e) for e in result.errors]
    return check_event_paths(result, tree.root)


def only(found: list[Diagnostic], severity: str) -> list[Diagnostic]:
    return [d for d in found if d.severity == severity]


PR_REF_ON_PUSH = """\
mounts:
  - kind: git
    repository: o/r
    mountPath: /w
    ref: refs/pull/{{payload.github.pullRequest.number}}/head
triggers:
  - event: push
"""


def test_ref_path_that_cannot_exist_for_the_event_is_an_error(tree: Tree) -> None:
    found = diagnose(tree, PR_REF_ON_PUSH)
    [error] = found
    assert error.severity == "error"
    assert (error.file, error.line, error.path) == (".auto/agents/a.yaml", 10, "mounts.0.ref")
    assert "{{payload.github.pullRequest.number}}" in error.message
    assert "cannot exist in event 'push'" in error.message
    assert "github has no field 'pullRequest'" in error.message


def test_ref_of_an_agent_without_triggers_is_not_checked(tree: Tree) -> None:
    assert diagnose(tree, PR_REF_ON_PUSH.replace("triggers:\n  - event: push\n", "")) == []


def test_text_paths_exact_optional_object_and_unknown(tree: Tree) -> None:
    found = diagnose(
        tree,
        """\
        triggers:
          - event: pull_request
            actions: [opened]
            displayTitle: "#{{ github.pullRequest.number }} {{ github.pullRequest.title }}"
            initialPrompt: "by {{ github.pullRequest.labels.0.name }} {{ github.pullRequest }}"
            message: "{{ github.pullRequest.nope }} {{ github.event }} {{ github.deliveryId }}"
        """,
    )
    assert [(d.severity, d.path) for d in found] == [
        ("warning", "triggers.0.initialPrompt"),
        ("warning", "triggers.0.initialPrompt"),
        ("error", "triggers.0.message"),
    ]
    optional, obj, unknown = found
    assert "may be absent or null" in optional.message
    assert "github.pullRequest.labels may have no item 0" in optional.message
    assert "is an object or a list" in obj.message
    assert "github.pullRequest has no field 'nope'" in unknown.message
    assert unknown.line == 11


def test_snake_case_path_suggests_the_envelope_key(tree: Tree) -> None:
    [error] = diagnose(
        tree, "triggers:\n  - {event: pull_request, displayTitle: '{{ github.pull_request }}'}\n"
    )
    assert "did you mean 'pullRequest'?" in error.message


def test_always_present_envelope_keys(tree: Tree) -> None:
    assert (
        diagnose(
            tree,
            "triggers:\n  - {event: push, message: '{{ github.event }} {{ github.deliveryId }}'}\n",
        )
        == []
    )
    [error] = diagnose(tree, "triggers:\n  - {event: push, message: '{{ github.event.x }}'}\n")
    assert "github.event is a string" in error.message


def test_action_specific_paths(tree: Tree) -> None:
    changes = "{{ github.changes.title.from }}"
    edited = diagnose(
        tree, f"triggers:\n  - {{event: pull_request, actions: [edited], message: '{changes}'}}\n"
    )
    assert only(edited, "error") == []  # exists for edited (optional: a warning)
    both = diagnose(
        tree,
        "triggers:\n  - {event: pull_request, actions: [opened, edited], "
        f"message: '{changes}'}}\n",
    )
    [error] = only(both, "error")
    assert "cannot exist in pull_request action opened" in error.message
    unlisted = diagnose(tree, f"triggers:\n  - {{event: pull_request, message: '{changes}'}}\n")
    assert only(unlisted, "error") == []
    [warning] = only(unlisted, "warning")
    assert "is absent in pull_request actions" in warning.message
    assert "list the actions it exists for" in warning.message


def test_unknown_actions(tree: Tree) -> None:
    # an unknown event the compiler refuses already (tests/agents/test_github_events.py)
    [action] = diagnose(tree, "triggers:\n  - {event: pull_request, actions: [opened, open]}\n")
    assert (action.severity, action.path) == ("error", "triggers.0.actions.1")
    assert "unknown action 'open'" in action.message
    [none] = diagnose(tree, "triggers:\n  - {event: push, actions: [created]}\n")
    assert "event 'push' has no actions" in none.message


def test_branches_need_an_event_that_carries_one(tree: Tree) -> None:
    [error] = diagnose(tree, "triggers:\n  - {event: issue_comment, branches: [main]}\n")
    assert (error.severity, error.path) == ("error", "triggers.0.branches")
    assert "carries no branch" in error.message
    assert "github.ref" in error.message
    for event in ("push", "pull_request", "create", "check_run", "workflow_run", "merge_group"):
        assert diagnose(tree, f"triggers:\n  - {{event: {event}, branches: [main]}}\n") == []


def test_branch_sources_follow_the_matcher() -> None:
    assert branch_sources("pull_request") == (("pullRequest", "base", "ref"),)
    assert branch_sources("push") == (("ref",),)
    assert branch_sources("create") == (("refType",), ("ref",))
    assert branch_sources("check_suite") == (("checkSuite", "headBranch"),)


def test_filter_paths(tree: Tree) -> None:
    found = diagnose(
        tree,
        """\
        triggers:
          - event: issue_comment
            actions: [created]
            filters:
              - {path: github.comment.body, matches: "^/go"}
              - {path: github.issue.pullRequest, exists: true}
              - {path: github.comment.nope, equals: 1}
              - {path: github.issue.labels, matches: "x"}
        """,
    )
    assert [(d.severity, d.path) for d in found] == [
        ("error", "triggers.0.filters.2.path"),
        ("warning", "triggers.0.filters.3.path"),
    ]
    assert found[0].line == 12
    assert "is an object or a list" in found[1].message


def test_list_index_may_be_absent(tree: Tree) -> None:
    [warning] = diagnose(
        tree,
        "triggers:\n  - {event: pull_request, message: '{{ github.pullRequest.labels.0.name }}'}\n",
    )
    assert warning.severity == "warning"
    assert "github.pullRequest.labels may have no item 0" in warning.message
    [error] = diagnose(
        tree,
        "triggers:\n  - {event: pull_request, message: '{{ github.pullRequest.labels.x }}'}\n",
    )
    assert "is a list: index it with a number" in error.message


def test_free_form_maps_are_uncertain_not_wrong(tree: Tree) -> None:
    [warning] = diagnose(
        tree, "triggers:\n  - {event: workflow_dispatch, message: '{{ github.inputs.target }}'}\n"
    )
    assert warning.severity == "warning"


def test_finding_in_an_imported_fragment_names_that_file(tree: Tree) -> None:
    tree.write(
        "fragments/review.yaml",
        """\
        triggers:
          - event: push
            name: pushed
            message: "{{ github.pullRequest.title }}"
        """,
    )
    found = diagnose(tree, "imports: [../fragments/review.yaml]\n")
    [error] = found
    assert (error.file, error.line, error.path) == (
        ".auto/fragments/review.yaml",
        4,
        "triggers.0.message",
    )


def check_text(tree: Tree, *, strict: bool) -> tuple[int, str]:
    out = io.StringIO()
    code = run_check(
        tree.root,
        as_json=False,
        secret_names=(),
        out=out,
        extra_checks=(check_event_paths,),
        strict=strict,
    )
    return code, out.getvalue()


def test_strict_turns_warnings_into_errors(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        BASE
        + "triggers:\n  - {event: pull_request, message: '{{ github.pullRequest.labels.0.name }}'}"
        + "\n",
    )
    code, text = check_text(tree, strict=False)
    assert code == 0
    assert ".auto/agents/a.yaml:7: warning: triggers.0.message: message token" in text
    code, text = check_text(tree, strict=True)
    assert code == 1
    assert ".auto/agents/a.yaml:7: triggers.0.message: message token" in text
    assert text.splitlines()[-1] == "1 error"


def test_cli_check_runs_schema_checks_and_strict(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOOKSPAWN_SECRET_NAMES", raising=False)
    tree.write("agents/a.yaml", BASE + PR_REF_ON_PUSH)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["check", str(tree.root)]) == 1
    assert "mounts.0.ref: ref token" in out.getvalue()
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["check", str(tree.root), "--no-event-schemas"]) == 0
    tree.write(
        "agents/a.yaml",
        BASE
        + "triggers:\n  - {event: pull_request, message: '{{ github.pullRequest.labels.0.name }}'}"
        + "\n",
    )
    with redirect_stdout(io.StringIO()):
        assert main(["check", str(tree.root)]) == 0
        assert main(["check", str(tree.root), "--strict"]) == 1


@pytest.fixture
def thousand(tmp_path: Path) -> Path:
    auto = tmp_path / "big" / ".auto"
    (auto / "agents").mkdir(parents=True)
    for i in range(1000):
        event, path = [
            ("pull_request", "github.pullRequest.number"),
            ("issue_comment", "github.issue.number"),
            ("push", "github.after"),
            ("push", "github.pullRequest.number"),  # an error, 1 in 4
        ][i % 4]
        (auto / "agents" / f"a{i:04d}.yaml").write_text(
            BASE.replace("name: a", f"name: a{i:04d}")
            + f"triggers:\n  - event: {event}\n    displayTitle: 'x {{{{ {path} }}}}'\n"
        )
    return auto


def test_a_thousand_agents_are_checked_with_a_cache(thousand: Path) -> None:
    result = compile_dir(thousand)
    assert len(result.agents) == 1000
    schemas = EventSchemas()
    findings = check_agents(result.agents, schemas)
    assert [f.severity for f in findings] == ["error"] * 250
    # one verdict per distinct (event, action, path), not per agent
    assert len(schemas._verdicts) < 60


@pytest.mark.slow
def test_check_imports_no_model_nor_client_and_live_shapes_import_only_the_events_used() -> None:
    examples = Path(__file__).parents[4] / "examples" / ".auto"
    code = (
        "import contextlib, io, sys\n"
        "from hookspawn.cli import main\n"
        "from hookspawn.cli.check.event_schemas import EventSchemas\n"
        "from hookspawn.cli.check.event_shapes import LiveShapes\n"
        "loaded = lambda: sorted(k for k in sys.modules if k.startswith('githubkit_schemas') "
        "and '.webhooks.' in k and not k.endswith(('._namespace', '._types')))\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['check', '--strict', {str(examples)!r}]) == 0\n"
        "clients = sorted({'httpx', 'redis', 'githubkit'} & set(sys.modules))\n"
        "shipped = loaded()\n"
        "EventSchemas(LiveShapes()).verdict('push', None, ('headCommit', 'id'))\n"
        "print(clients, shipped, loaded())\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    clients, shipped, live = done.stdout.strip().split("] [")
    assert (clients, shipped) == ("[", "")
    assert live.rstrip("]").split(", ") == ["'githubkit_schemas.v2026_03_10.webhooks.push'"]


def test_a_file_with_errors_has_its_paths_checked_in_the_same_run(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        BASE
        + textwrap.dedent(
            """\
            mounts:
              - kind: git
                repository: o/r
                mountPath: /w
                ref: main
                auth: {kind: githubApp, capabilities: {contents: admin}}
            tools:
              - kind: github
            triggers:
              - event: pull_request
                actions: [opened]
                displayTitle: "{{ github.pullRequest.titel }}"
            """
        ),
    )
    out = io.StringIO()
    code = run_check(
        tree.root, as_json=False, secret_names=(), out=out, extra_checks=(check_event_paths,)
    )
    assert code == 1
    assert out.getvalue().splitlines() == [
        ".auto/agents/a.yaml:11: mounts.0.auth.capabilities.contents: must be one of none | read "
        "| write, got 'admin'",
        ".auto/agents/a.yaml:17: triggers.0.displayTitle: displayTitle token "
        "{{ github.pullRequest.titel }} cannot exist in pull_request action opened: "
        "github.pullRequest has no field 'titel'",
        "2 errors",
    ]
