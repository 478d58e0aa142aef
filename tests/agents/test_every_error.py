"""A file with several problems gets every one of them in one compile, each naming its file and
field, and no error that only follows from another; what of a failed agent compiled whole is
kept for the checks beyond compiling."""

from __future__ import annotations

from agents import compile_dir
from agents.model import PartialAgent
from tests.agents.conftest import BASE, Tree

MOUNT = """\
mounts:
  - kind: git
    repository: o/r
    mountPath: /w
    ref: main
    auth:
      kind: githubApp
      capabilities: {contents: admin}
"""
TRIGGERS = """\
triggers:
  - event: issues
    displayTitle: "{{ github.issue.number }}"
  - event: push
    actions: [nope]
    filters: [{path: github.ref, mattches: x}]
"""


def test_every_field_error_of_a_file_is_reported(tree: Tree) -> None:
    errors = tree.errors(MOUNT + "tools:\n  - kind: github\n" + TRIGGERS + "env: [1]\n")
    found = [(e.file, e.path) for e in errors]
    assert found == [
        (".auto/agents/a.yaml", "mounts.0.auth.capabilities.contents"),
        (".auto/agents/a.yaml", "triggers.1.filters.0.mattches"),
        (".auto/agents/a.yaml", "triggers.1.filters.0"),
        (".auto/agents/a.yaml", "env"),
    ], [str(e) for e in errors]


def test_a_failed_mount_brings_no_warning_about_the_mounts(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + MOUNT + "tools:\n  - kind: github\n    allow: [x]\n")
    result = compile_dir(tree.root)
    assert [e.path for e in result.errors] == ["mounts.0.auth.capabilities.contents"]
    assert [w.path for w in result.warnings] == []


def test_a_failed_agent_keeps_what_compiled_whole(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + MOUNT + "triggers:\n  - event: issues\n")
    good_mount = MOUNT.replace("admin", "read")
    tree.write(
        "agents/b.yaml",
        BASE.replace("name: a", "name: b") + good_mount + "triggers:\n  - event: 5\n",
    )
    tree.write("agents/c.yaml", BASE.replace("name: a", "name: c") + "env: {X: {$secret: nope}}\n")
    result = compile_dir(tree.root, secret_names=["OTHER"])
    assert result.agents == ()
    a, b, c = sorted(result.partial, key=lambda p: p.source_file)
    assert isinstance(a, PartialAgent)
    assert (a.name, a.source_file, a.mounts, [t.event for t in a.triggers]) == (
        "a",
        ".auto/agents/a.yaml",
        (),
        ["issues"],
    )
    assert ([m.mount_path for m in b.mounts], b.triggers) == (["/w"], ())
    # an agent whose own fields compiled and failed across the set (a secret) is kept whole
    assert (c.name, c.mounts, c.triggers) == ("c", (), ())
    assert [e.path for e in result.errors if e.file.endswith("c.yaml")] == ["env.X.$secret"]
