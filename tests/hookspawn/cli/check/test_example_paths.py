"""Event-path knowledge is githubkit's models and GitHub's example payloads together: no path a
real payload carries is refused, the shipped index is current, and true errors stay errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agents import Diagnostic, compile_dir
from hookspawn.cli.check.event_checks import check_agents, check_event_paths
from hookspawn.cli.check.event_paths import INDEX_FILE, ExamplePaths, build_index, index_text
from hookspawn.cli.check.event_schemas import EventSchemas
from tests.agents.conftest import BASE, Tree
from triggers.envelope import camel

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[4]
TOKEN_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|0|[1-9][0-9]*")


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Every leaf path of a payload (empty objects and lists are leaves too)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, (*path, camel(key)))
    elif isinstance(value, list) and value:
        for number, item in enumerate(value):
            yield from _leaves(item, (*path, str(number)))
    else:
        yield path


def _example_paths(webhooks_dir: Path) -> dict[tuple[str, str | None], set[tuple[str, ...]]]:
    """(event, action) → every leaf path its example payloads carry."""
    found: dict[tuple[str, str | None], set[tuple[str, ...]]] = {}
    for file in sorted(webhooks_dir.glob("*/*.json")):
        body = json.loads(file.read_text())
        paths = found.setdefault((file.parent.name, body.get("action")), set())
        paths.update(_leaves(body, ()))
    return found


def _writable(path: tuple[str, ...]) -> bool:
    return all(TOKEN_SEGMENT.fullmatch(segment) for segment in path)


def test_the_shipped_index_is_generated_from_the_examples(webhooks_dir: Path) -> None:
    index = build_index(webhooks_dir)
    assert INDEX_FILE.read_text() == index_text(index)
    assert "octokit/webhooks" in index["source"] and "MIT" in index["source"]
    assert (ROOT / index["generator"]).is_file()
    assert (webhooks_dir / "LICENSE").read_text().startswith("The MIT License")
    script = subprocess.run(
        [sys.executable, str(ROOT / index["generator"]), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert script.returncode == 0, script.stdout + script.stderr
    assert "is current" in script.stdout


#: the example payloads' events are checked in this many parts, each its own test, so that xdist
#: spreads them (each part imports githubkit's models of its own events only)
PARTS = 6


@cache
def _examples(webhooks_dir: Path) -> dict[tuple[str, str | None], set[tuple[str, ...]]]:
    return _example_paths(webhooks_dir)


def _parts(examples: dict[tuple[str, str | None], set[tuple[str, ...]]]) -> list[list[str]]:
    """The events, shared out over PARTS parts of about as many paths each (an event in one)."""
    sizes: Counter[str] = Counter()
    for (event, _), paths in examples.items():
        sizes[event] += len(paths)
    parts: list[list[str]] = [[] for _ in range(PARTS)]
    loads = [0] * PARTS
    for event, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        lightest = loads.index(min(loads))
        parts[lightest].append(event)
        loads[lightest] += size
    return parts


def test_every_example_payload_path_is_in_one_part_and_only_dotless_keys_are_left_out(
    webhooks_dir: Path,
) -> None:
    examples = _examples(webhooks_dir)
    assert len(examples) > 150 and sum(len(p) for p in examples.values()) > 30_000
    parts = _parts(examples)
    events = [event for part in parts for event in part]
    assert sorted(events) == sorted({event for event, _ in examples})  # each in one part
    assert all(parts)
    unwritable: set[str] = set()
    for paths in examples.values():
        unwritable.update(s for p in paths if not _writable(p) for s in p if not _writable((s,)))
    # only keys no dotted path can spell are left out: reaction counts (+1, -1) and dotted
    # label names of container images
    assert {s for s in unwritable if "." not in s} <= {"+1", "-1"}


@pytest.mark.slow  # imports githubkit's model of every event (seconds)
@pytest.mark.parametrize("part", range(PARTS))
def test_every_path_of_every_example_payload_is_accepted(
    tree: Tree, webhooks_dir: Path, part: int
) -> None:
    """One agent per (event, action) of this part's events, each example leaf path as an
    `exists` filter and as a displayTitle token; one compile and one schema check for all of
    them: no error."""
    examples = _examples(webhooks_dir)
    events = set(_parts(examples)[part])
    mine = 0
    for number, ((event, action), paths) in enumerate(sorted(examples.items(), key=str)):
        if event not in events:
            continue
        mine += 1
        writable = sorted(p for p in paths if _writable(p))
        trigger: dict[str, Any] = {
            "event": event,
            "filters": [{"path": ".".join(("github", *p)), "exists": True} for p in writable],
            "displayTitle": " ".join("{{ github." + ".".join(p) + " }}" for p in writable if p),
        }
        if action is not None:
            trigger["actions"] = [action]
        agent = BASE.replace("name: a", f"name: e{number}") + "triggers:\n"
        tree.write(f"agents/e{number}.yaml", agent + "  - " + json.dumps(trigger) + "\n")
    result = compile_dir(tree.root)
    assert result.errors == (), [str(e) for e in result.errors[:5]]
    assert len(result.agents) == mine > 0
    found = check_agents(result.agents)  # unlocated: the files are one line per trigger
    errors = [f"{f.agent.name}: {f.path}: {f.message}" for f in found if f.severity == "error"]
    assert errors == [], errors[:10]
    assert found  # the check ran: uncertain and null paths are warned about


def diagnose(tree: Tree, text: str) -> list[Diagnostic]:
    tree.write("agents/a.yaml", BASE + textwrap.dedent(text))
    result = compile_dir(tree.root)
    assert result.ok, [str(e) for e in result.errors]
    return check_event_paths(result, tree.root)


MERGE_REF = """\
mounts:
  - kind: git
    repository: o/r
    mountPath: /w
    ref: refs/pull/{{payload.github.pullRequest.mergeCommitSha}}/merge
triggers:
  - event: pull_request
    actions: ACTIONS
"""


def test_a_field_the_models_omit_but_github_sends_is_no_error(tree: Tree) -> None:
    schemas = EventSchemas.shared()
    # githubkit's models alone refuse it ...
    modelled = schemas._modelled("pull_request", "opened", ("pullRequest", "mergeCommitSha"))
    assert not modelled.possible
    # ... the example payloads know it (null on opened: a warning says so)
    found = diagnose(tree, MERGE_REF.replace("ACTIONS", "[opened]"))
    assert [d.severity for d in found] == ["warning"]
    assert "may be null" in found[0].message
    # an action without an example shares the pull request's shape with the others
    found = diagnose(tree, MERGE_REF.replace("ACTIONS", "[edited]"))
    assert [d.severity for d in found] == ["warning"]
    assert "example payloads of pull_request" in found[0].message


def test_true_errors_stay_errors(tree: Tree) -> None:
    found = diagnose(
        tree,
        """\
        mounts:
          - kind: git
            repository: o/r
            mountPath: /w
            ref: refs/pull/{{payload.github.pullRequest.number}}/head
        triggers:
          - event: push
          - event: pull_request
            actions: [opened]
            displayTitle: "{{ github.pullRequest.nope }} {{ github.changes.title.from }}"
        """,
    )
    errors = {(d.path, d.message.split(":")[0]) for d in found if d.severity == "error"}
    assert errors == {
        (
            "mounts.0.ref",
            "ref token {{payload.github.pullRequest.number}} (for trigger 0, push) "
            "cannot exist in event 'push'",
        ),
        (
            "triggers.1.displayTitle",
            "displayTitle token {{ github.pullRequest.nope }} cannot "
            "exist in pull_request action opened",
        ),
        # `changes` comes with edited only: its top object is not in an opened payload
        (
            "triggers.1.displayTitle",
            "displayTitle token {{ github.changes.title.from }} cannot "
            "exist in pull_request action opened",
        ),
    }


def test_repository_dispatch_actions_are_the_senders_event_types(tree: Tree) -> None:
    found = diagnose(
        tree,
        """\
        triggers:
          - event: repository_dispatch
            actions: [deploy, on-demand-test]
            displayTitle: "{{ github.action }} {{ github.nope }}"
          - event: push
            actions: [deploy]
        """,
    )
    errors = sorted((d.path, d.message) for d in found if d.severity == "error")
    assert [path for path, _ in errors] == ["triggers.0.displayTitle", "triggers.1.actions.0"]
    assert "actions deploy, on-demand-test: github has no field 'nope'" in errors[0][1]
    assert "event 'push' has no actions" in errors[1][1]


def test_lookup_generalises_list_indexes_and_knows_events_githubkit_lacks() -> None:
    examples = ExamplePaths.shipped()
    known = examples.lookup("pull_request", "labeled", ("pullRequest", "labels", "7", "name"))
    assert known is not None and known.for_action and known.scalar is True
    assert examples.lookup("push", None, ("pullRequest",)) is None
    assert None in examples.actions("push")
    schemas = EventSchemas.shared()
    assert examples.event_names <= schemas.event_names
    for event in examples.event_names:
        assert set(examples.actions(event)) <= set(schemas.actions(event))


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path / ".auto")
