"""Imports and merge rules: order, keyed mounts, accumulating lists, remove, provenance, limits."""

from __future__ import annotations

from tests.agents.conftest import BASE, ENV, Tree, find

FRAGMENT = """\
harness: claude-code
systemPrompt: from the fragment
environment:
  name: runtime
  labels: {team: infra}
  image: {kind: preset, name: node24}
  steps: [RUN one, RUN two]
mounts:
  - name: widgets
    kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
    auth:
      kind: githubApp
      capabilities: {contents: read, issues: read}
  - kind: git
    repository: acme/docs
    mountPath: /workspace/docs
    ref: main
triggers:
  - {kind: github, event: push, name: pushed}
  - {kind: github, event: issues, name: issues}
tools:
  - kind: github
env:
  A: from-fragment
  B: from-fragment
"""


def test_import_then_own_file_merge(tree: Tree) -> None:
    tree.write("fragments/base.yaml", FRAGMENT)
    tree.write(
        "agents/a.yaml",
        """\
name: a
imports: [../fragments/base.yaml]
systemPrompt: own
environment:
  labels: {tier: gold}
  steps: [RUN three]
mounts:
  - name: widgets
    ref: develop
    auth:
      capabilities: {contents: write}
  - kind: git
    repository: acme/docs
    mountPath: /workspace/docs
    depth: 5
  - kind: git
    repository: acme/extra
    mountPath: /workspace/extra
    ref: main
triggers:
  - {kind: github, event: pull_request, name: pushed}
  - {kind: github, event: release}
tools:
  - {kind: github, allow: [get_issue]}
env:
  B: own
""",
    )
    result = tree.compile()
    assert result.errors == ()
    (agent,) = result.agents
    assert agent.harness == "claude-code"
    assert agent.system_prompt == "own"  # the importing file wins
    resource = agent.environment_resource
    assert resource.labels == {"team": "infra", "tier": "gold"}  # maps deep-merge
    assert resource.spec.steps == ("RUN three",)  # arrays replace
    widgets, docs, extra = agent.mounts
    assert widgets.ref == "develop"
    assert widgets.auth.kind == "githubApp"  # deep-merged by name
    assert widgets.auth.capabilities.contents == "write"
    assert widgets.auth.capabilities.issues == "read"
    assert docs.depth == 5 and docs.ref == "main"  # keyed by mountPath
    assert extra.repository == "acme/extra"  # new key appends
    assert [(t.event, t.name) for t in agent.triggers] == [
        ("pull_request", "pushed"),  # same name replaces in place
        ("issues", "issues"),
        ("release", None),
    ]
    assert [t.index for t in agent.triggers] == [0, 1, 2]
    assert agent.tools == ({"kind": "github"}, {"kind": "github", "allow": ["get_issue"]})
    assert agent.env == {"A": "from-fragment", "B": "own"}
    assert all("name" not in m.to_json() for m in agent.mounts)


def test_unnamed_mount_matches_a_named_one_by_mount_path(tree: Tree) -> None:
    tree.write("fragments/base.yaml", FRAGMENT)
    tree.write(
        "agents/a.yaml",
        "name: a\nimports: [../fragments/base.yaml]\n"
        "mounts:\n  - {mountPath: /workspace/widgets, depth: 3}\n"
        "  - {name: other, kind: git, repository: acme/o, mountPath: /o, ref: main}\n",
    )
    result = tree.compile()
    assert result.errors == ()
    widgets, docs, other = result.agents[0].mounts
    assert (widgets.repository, widgets.depth) == ("acme/widgets", 3)
    assert docs.mount_path == "/workspace/docs" and other.mount_path == "/o"


def test_named_override_merges_into_an_unnamed_import_at_the_same_path(tree: Tree) -> None:
    tree.write("fragments/base.yaml", FRAGMENT)
    tree.write(
        "agents/a.yaml",
        "name: a\nimports: [../fragments/base.yaml]\n"
        "mounts:\n  - {name: docs, mountPath: /workspace/docs/, depth: 5}\n",
    )
    result = tree.compile()
    assert result.errors == (), [str(e) for e in result.errors]
    widgets, docs = result.agents[0].mounts
    assert (docs.repository, docs.mount_path, docs.depth) == ("acme/docs", "/workspace/docs", 5)
    assert widgets.repository == "acme/widgets"


def test_two_names_never_match_by_path(tree: Tree) -> None:
    tree.write("fragments/base.yaml", FRAGMENT)
    tree.write(
        "agents/a.yaml",
        "name: a\nimports: [../fragments/base.yaml]\n"
        "mounts:\n  - {name: other, kind: git, repository: acme/o, mountPath: /workspace/widgets,"
        " ref: main}\n",
    )
    errors = tree.compile().errors
    find(errors, "mounts.2.mountPath", "already the mountPath of mounts.0")


def test_imports_apply_in_order_later_wins(tree: Tree) -> None:
    tree.write("fragments/one.yaml", "systemPrompt: one\nenv: {X: one, Y: one}\n")
    tree.write("fragments/two.yaml", "systemPrompt: two\nenv: {X: two}\n")
    tree.write("agents/a.yaml", BASE + "imports: [../fragments/one.yaml, ../fragments/two.yaml]\n")
    (agent,) = tree.compile().agents
    assert agent.system_prompt == "two"
    assert agent.env == {"X": "two", "Y": "one"}


def test_nested_imports_resolve_relative_to_the_importing_file(tree: Tree) -> None:
    tree.write("fragments/environments/runtime.yaml", "harness: codex\n" + ENV)
    tree.write("fragments/roles/coder.yaml", "imports: [../environments/runtime.yaml]\n")
    tree.write("agents/a.yaml", "name: a\nimports: [../fragments/roles/coder.yaml]\n")
    result = tree.compile()
    assert result.ok
    assert result.agents[0].harness == "codex"
    assert result.agents[0].environment == "runtime"


def test_string_environment_and_inline_override_each_other(tree: Tree) -> None:
    tree.write("fragments/inline.yaml", ENV)
    tree.write("fragments/named.yaml", "environment: runtime\n")
    tree.write(
        "agents/a.yaml",
        "name: a\nharness: codex\nimports: [../fragments/named.yaml]\n"
        + ENV.replace("runtime", "own"),
    )
    tree.write(
        "agents/b.yaml",
        "name: b\nharness: codex\nimports: [../fragments/inline.yaml]\nenvironment: own\n",
    )
    result = tree.compile()
    assert result.errors == ()
    a, b = result.agents
    assert a.environment == "own" and b.environment == "own"
    assert list(result.environments) == ["own"]


def test_remove_applies_after_imports_before_the_file_itself(tree: Tree) -> None:
    tree.write("fragments/base.yaml", FRAGMENT)
    tree.write(
        "agents/a.yaml",
        """\
name: a
imports: [../fragments/base.yaml]
remove:
  tools: [github]
  triggers: [issues, pushed]
  env: [A]
triggers:
  - {kind: github, event: pull_request, name: pushed}
""",
    )
    result = tree.compile()
    assert result.errors == ()
    (agent,) = result.agents
    assert agent.tools == ()
    assert [(t.event, t.name) for t in agent.triggers] == [("pull_request", "pushed")]
    assert agent.env == {"B": "from-fragment"}


def test_remove_rules(tree: Tree) -> None:
    tree.write("fragments/base.yaml", FRAGMENT)
    tree.write(
        "agents/a.yaml",
        """\
name: a
imports: [../fragments/base.yaml]
remove:
  mounts: [widgets]
  environment: [x]
  triggers: [nope]
""",
    )
    result = tree.compile()
    mounts = find(result.errors, "remove.mounts", "mounts are not removable")
    assert mounts.message == "mounts are not removable; override by key or drop the import"
    assert (mounts.file, mounts.line) == (".auto/agents/a.yaml", 4)
    find(result.errors, "remove.environment", "only tools, triggers, env")
    find(result.warnings, "remove.triggers", "no imported trigger named 'nope'")
    find(tree.errors("remove: [tools]\n"), "remove", "must be a mapping")


def test_errors_in_merged_content_point_where_they_were_written(tree: Tree) -> None:
    tree.write(
        "fragments/mount.yaml",
        """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w
    ref: main
    auth:
      kind: githubApp
      capabilities:
        merge: write
        contents: read
""",
    )
    tree.write("agents/a.yaml", BASE + "imports: [../fragments/mount.yaml]\n")
    tree.write(
        "agents/b.yaml", BASE.replace("name: a", "name: b") + "imports: [../fragments/mount.yaml]\n"
    )
    errors = tree.compile().errors
    error = find(errors, "mounts.0.auth.capabilities.merge", "needs contents: write")
    assert str(error).startswith(".auto/fragments/mount.yaml:9: mounts.0.auth.capabilities.merge:")
    # Two agents import it; the problem is reported once.
    assert len([e for e in errors if e.path == "mounts.0.auth.capabilities.merge"]) == 1


def test_unknown_key_in_a_fragment_is_reported_at_the_fragment(tree: Tree) -> None:
    tree.write("fragments/f.yaml", "harness: codex\ndescriptoin: typo\n")
    tree.write("agents/a.yaml", "name: a\nimports: [../fragments/f.yaml]\n" + ENV)
    error = find(tree.compile().errors, "descriptoin", "unknown key 'descriptoin'")
    assert (error.file, error.line) == (".auto/fragments/f.yaml", 2)


def test_missing_required_fields_after_imports(tree: Tree) -> None:
    tree.write("fragments/f.yaml", "systemPrompt: x\n")
    tree.write("agents/a.yaml", "imports: [../fragments/f.yaml]\n")
    errors = tree.compile().errors
    for field in ("name", "harness", "environment"):
        error = find(errors, field, f"required field '{field}' is missing")
        assert (error.file, error.line) == (".auto/agents/a.yaml", 1)


def test_import_path_problems(tree: Tree) -> None:
    (tree.root.parent / "outside.yaml").write_text("harness: codex\n")
    errors = tree.errors(
        """\
imports:
  - ../fragments/missing.yaml
  - ../../outside.yaml
  - /etc/passwd
  - 7
"""
    )
    missing = find(errors, "imports.0", "no such file")
    assert (missing.file, missing.line) == (".auto/agents/a.yaml", 7)
    find(errors, "imports.1", "outside the .auto directory")
    find(errors, "imports.2", "relative to this file")
    find(errors, "imports.3", "must be a string")
    find(tree.errors("imports: ../x.yaml\n"), "imports", "must be a list")


def test_import_cycle_reports_the_chain(tree: Tree) -> None:
    tree.write("fragments/b.yaml", "imports: [../agents/a.yaml]\n")
    tree.write("agents/a.yaml", BASE + "imports: [../fragments/b.yaml]\n")
    error = find(tree.compile().errors, "imports.0", "import cycle")
    assert error.message == (
        "import cycle: .auto/agents/a.yaml → .auto/fragments/b.yaml → .auto/agents/a.yaml"
    )
    assert (error.file, error.line) == (".auto/fragments/b.yaml", 1)


def test_self_import_is_a_cycle(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "imports: [a.yaml]\n")
    error = find(tree.compile().errors, "imports.0", "import cycle")
    assert error.message == "import cycle: .auto/agents/a.yaml → .auto/agents/a.yaml"


def test_a_thousand_deep_import_chain_stops_at_the_limit(tree: Tree) -> None:
    for i in range(1000):
        tree.write(
            f"fragments/f{i}.yaml", f"imports: [f{i + 1}.yaml]\n" if i < 999 else "env: {}\n"
        )
    tree.write("agents/a.yaml", BASE + "imports: [../fragments/f0.yaml]\n")
    errors = tree.compile().errors
    error = find(errors, "imports.0", "import chain deeper than 64 files")
    assert error.file == ".auto/fragments/f62.yaml"  # a.yaml + f0..f62 = 64 files
    assert len(errors) == 1


def test_a_long_import_cycle_is_reported_once(tree: Tree) -> None:
    for i in range(10):
        tree.write(f"fragments/c{i}.yaml", f"imports: [c{(i + 1) % 10}.yaml]\n")
    tree.write("agents/a.yaml", BASE + "imports: [../fragments/c0.yaml]\n")
    tree.write(
        "agents/b.yaml", BASE.replace("name: a", "name: b") + "imports: [../fragments/c5.yaml]\n"
    )
    errors = tree.compile().errors
    cycles = [e for e in errors if "import cycle" in e.message]
    assert len(cycles) == 1
    assert cycles[0].message.count("→") == 10
