"""`check --strict` and paths that may be null: fine in a text template and
in a ref guarded by a trigger filter on that path; otherwise refused, naming the guard."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hookspawn.cli.check.event_checks import check_event_paths
from hookspawn.cli.check.report import run_check
from tests.agents.conftest import BASE, Tree

# `mergedBy` is null until a pull request is merged; `labels.0` may be missing altogether
AGENT = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w
    ref: REF
triggers:
  - kind: github
    event: pull_request
    actions: [opened]
FILTERS
    displayTitle: "TITLE"
"""


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    monkeypatch.chdir(tmp_path)
    return Tree(tmp_path / ".auto")


def strict(tree: Tree, ref: str, title: str, filters: str = "") -> tuple[int, str]:
    text = AGENT.replace("REF", ref).replace("TITLE", title)
    text = text.replace("FILTERS\n", f"    filters:\n      - {filters}\n" if filters else "")
    tree.write("agents/a.yaml", BASE + text)
    out = io.StringIO()
    code = run_check(
        tree.root,
        as_json=False,
        secret_names=(),
        out=out,
        extra_checks=(check_event_paths,),
        strict=True,
    )
    return code, out.getvalue()


def test_a_null_path_in_a_text_template_passes_strict(tree: Tree) -> None:
    code, text = strict(tree, "main", "merged by {{ github.pullRequest.mergedBy.login }}")
    assert code == 0, text


def test_an_absent_path_in_a_text_template_is_refused_and_told_its_guard(tree: Tree) -> None:
    code, text = strict(tree, "main", "{{ github.pullRequest.labels.0.name }}")
    assert code == 1
    assert "may be absent or null" in text
    assert "{path: github.pullRequest.labels.0.name, exists: true} on trigger 0" in text
    guard = "{path: github.pullRequest.labels.0.name, exists: true}"
    code, text = strict(tree, "main", "{{ github.pullRequest.labels.0.name }}", guard)
    assert code == 0, text


@pytest.mark.parametrize(
    "guard",
    [
        "{path: github.pullRequest.mergedBy.login, exists: true}",
        "{path: github.pullRequest.mergedBy.login, in: [octocat, hubot]}",
        "{path: github.pullRequest.mergedBy.login, equals: octocat}",
        '{path: github.pullRequest.mergedBy.login, matches: "^[a-z]"}',
    ],
)
def test_a_null_path_in_a_ref_passes_strict_only_when_a_filter_guards_it(
    tree: Tree, guard: str
) -> None:
    ref = "refs/heads/{{ payload.github.pullRequest.mergedBy.login }}"
    code, text = strict(tree, ref, "Review")
    assert code == 1
    (line,) = [line for line in text.splitlines() if "mounts.0.ref" in line]
    assert "may be null in pull_request (github.pullRequest.mergedBy may be null)" in line
    assert "{path: github.pullRequest.mergedBy.login, exists: true} on trigger 0" in line
    code, text = strict(tree, ref, "Review", guard)
    assert code == 0, text


@pytest.mark.parametrize(
    "not_a_guard",
    [
        "{path: github.pullRequest.mergedBy.login, exists: false}",
        "{path: github.pullRequest.mergedBy.login, in: [octocat, null]}",
        "{path: github.pullRequest.mergedBy, exists: true}",
    ],
)
def test_a_filter_that_admits_null_or_names_another_path_is_no_guard(
    tree: Tree, not_a_guard: str
) -> None:
    ref = "refs/heads/{{ payload.github.pullRequest.mergedBy.login }}"
    code, text = strict(tree, ref, "Review", not_a_guard)
    assert code == 1
    assert "mounts.0.ref" in text
