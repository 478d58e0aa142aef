"""Environment rules: every field constraint, generated resources, dedup, conflicts, references."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.agents.conftest import Tree, find

HEAD = "name: a\nharness: codex\n"
FULL = """\
environment:
  name: " tooled "
  labels: {team: infra}
  annotations: {owner: "platform@acme.dev"}
  image: {kind: base, ref: "ghcr.io/acme/base:1.2@sha256:abc"}
  steps:
    - RUN npm install -g tsx
  setup:
    - name: deps
      commands: [npm ci]
      cache: {key: npm-v1, files: [package-lock.json], paths: [/home/user/.npm]}
  setupCache: {ttl: 24h}
  resources: {cpuCount: 2}
  env:
    NODE_ENV: production
    NPM_TOKEN: {$secret: npm-token, optional: true}
  approval: prompt
"""


def test_full_inline_environment_becomes_a_resource(tree: Tree) -> None:
    tree.write("agents/a.yaml", HEAD + FULL)
    result = tree.compile()
    assert result.errors == ()
    resource = result.environments["tooled"]
    assert resource.to_json() == {
        "name": "tooled",
        "labels": {"team": "infra"},
        "annotations": {"owner": "platform@acme.dev"},
        "spec": {
            "image": {"kind": "base", "ref": "ghcr.io/acme/base:1.2@sha256:abc"},
            "baseImage": "ghcr.io/acme/base:1.2@sha256:abc",
            "steps": ["RUN npm install -g tsx"],
            "setup": [
                {
                    "name": "deps",
                    "commands": ["npm ci"],
                    "cache": {
                        "key": "npm-v1",
                        "files": ["package-lock.json"],
                        "paths": ["/home/user/.npm"],
                    },
                }
            ],
            "setupCache": {"ttl": "24h"},
            "resources": {"cpuCount": 2},
            "env": {
                "NODE_ENV": "production",
                "NPM_TOKEN": {"$secret": "npm-token", "optional": True},
            },
            "approval": "prompt",
        },
    }
    agent = result.agents[0]
    assert agent.environment == "tooled"
    assert agent.environment_resource == resource


@pytest.mark.parametrize(
    ("preset", "image"),
    [
        ("node24", "node:24-bookworm-slim"),
        ("node22", "node:22-bookworm-slim"),
        ("linux-node22", "node:22-bookworm-slim"),
        ("default", "node:24-bookworm-slim"),
    ],
)
def test_presets_resolve(tree: Tree, preset: str, image: str) -> None:
    tree.write(
        "agents/a.yaml",
        HEAD + f"environment: {{name: e, image: {{kind: preset, name: {preset}}}}}\n",
    )
    result = tree.compile()
    assert result.ok
    spec = result.environments["e"].spec
    assert spec.base_image == image
    assert spec.approval == "bypass"
    assert spec.steps == () and spec.setup == () and spec.env == {}


def env_with(lines: str) -> str:
    return "environment:\n  name: e\n  image: {kind: preset, name: node24}\n" + lines


NEGATIVE = [
    (
        "environment:\n  name: 'a b'\n  image: {kind: preset, name: node24}\n",
        "environment.name",
        "is not valid",
    ),
    (
        "environment:\n  name: '" + "x" * 129 + "'\n  image: {kind: preset, name: node24}\n",
        "environment.name",
        "is not valid",
    ),
    ("environment:\n  image: {kind: preset, name: node24}\n", "environment.name", "required field"),
    ("environment: {name: e}\n", "environment.image", "required field"),
    (env_with("  gpu: true\n"), "environment.gpu", "unknown key 'gpu'"),
    (env_with("  labels: [a]\n"), "environment.labels", "map of strings"),
    (env_with("  annotations: {a: 1}\n"), "environment.annotations.a", "must be a string"),
    (
        "environment:\n  name: e\n  image: {kind: preset, name: node99}\n",
        "environment.image.name",
        "Unknown runtime preset",
    ),
    (
        "environment:\n  name: e\n  image: {kind: preset, name: node24, ref: x}\n",
        "environment.image.ref",
        "unknown key",
    ),
    (
        "environment:\n  name: e\n  image: {kind: base, name: node24}\n",
        "environment.image.ref",
        "required field",
    ),
    (
        "environment:\n  name: e\n  image: {kind: docker, ref: x}\n",
        "environment.image.kind",
        "preset | base",
    ),
    (
        "environment:\n  name: e\n  image: {name: node24}\n",
        "environment.image.kind",
        "required field",
    ),
    ("environment:\n  name: e\n  image: node24\n", "environment.image", "kind: preset"),
    (
        "environment:\n  name: e\n  image: {kind: base, ref: 'a b'}\n",
        "environment.image.ref",
        "not an image reference",
    ),
    (
        "environment:\n  name: e\n  image: {kind: base, ref: 'a#b'}\n",
        "environment.image.ref",
        "not an image reference",
    ),
    (
        "environment:\n  name: e\n  image: {kind: base, ref: 'a\\\\b'}\n",
        "environment.image.ref",
        "not an image reference",
    ),
    (
        "environment:\n  name: e\n  image: {kind: base, ref: '-x'}\n",
        "environment.image.ref",
        "not an image reference",
    ),
    (
        "environment:\n  name: e\n  image: {kind: base, ref: '" + "a" * 513 + "'}\n",
        "environment.image.ref",
        "longer than 512",
    ),
    (
        "environment:\n  name: e\n  image: {kind: base, ref: '  '}\n",
        "environment.image.ref",
        "must not be empty",
    ),
    (env_with("  steps: RUN x\n"), "environment.steps", "list of strings"),
    (env_with("  steps: [1]\n"), "environment.steps.0", "must be a string"),
    (env_with("  setup: {name: x}\n"), "environment.setup", "list of setup entries"),
    (env_with("  setup: [{name: x}]\n"), "environment.setup.0.commands", "required field"),
    (
        env_with("  setup: [{name: x, commands: []}]\n"),
        "environment.setup.0.commands",
        "at least one",
    ),
    (
        env_with("  setup: [{name: x, commands: ['  ']}]\n"),
        "environment.setup.0.commands.0",
        "must not be empty",
    ),
    (
        env_with("  setup: [{name: 'x y', commands: [a]}]\n"),
        "environment.setup.0.name",
        "is not valid",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {files: [a]}}]\n"),
        "environment.setup.0.cache.key",
        "required field",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {key: 'k k'}}]\n"),
        "environment.setup.0.cache.key",
        "is not valid",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {key: k, files: [/etc/x]}}]\n"),
        "environment.setup.0.cache.files.0",
        "relative path",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {key: k, files: [../x]}}]\n"),
        "environment.setup.0.cache.files.0",
        "relative path",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {key: k, paths: [/tmp/x]}}]\n"),
        "environment.setup.0.cache.paths.0",
        "under /home/user",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {key: k, paths: [.npm]}}]\n"),
        "environment.setup.0.cache.paths.0",
        "under /home/user",
    ),
    (
        env_with(
            "  setup: [{name: x, commands: [a], cache: {key: k, paths: [/home/user/../root]}}]\n"
        ),
        "environment.setup.0.cache.paths.0",
        "under /home/user",
    ),
    (
        env_with("  setup: [{name: x, commands: [a], cache: {key: k, ttl: 1d}}]\n"),
        "environment.setup.0.cache.ttl",
        "unknown key",
    ),
    (env_with("  setupCache: {ttl: 0d}\n"), "environment.setupCache.ttl", "is not valid"),
    (env_with("  setupCache: {ttl: 7w}\n"), "environment.setupCache.ttl", "is not valid"),
    (env_with("  setupCache: {ttl: '10'}\n"), "environment.setupCache.ttl", "is not valid"),
    (env_with("  setupCache: {}\n"), "environment.setupCache.ttl", "required field"),
    (env_with("  resources: {}\n"), "environment.resources", "at least one"),
    (env_with("  resources: {cpuCount: 0}\n"), "environment.resources.cpuCount", "at least 1"),
    (env_with("  resources: {memoryMB: 64}\n"), "environment.resources.memoryMB", "at least 128"),
    (
        env_with("  resources: {memoryMB: 1.5}\n"),
        "environment.resources.memoryMB",
        "must be an integer",
    ),
    (env_with("  resources: {gpus: 1}\n"), "environment.resources.gpus", "unknown key"),
    (env_with("  env: {1BAD: x}\n"), "environment.env.1BAD", "not a valid variable name"),
    (env_with("  env: {PORT: 8080}\n"), "environment.env.PORT", "must be a string"),
    (env_with("  env: {T: {optional: true}}\n"), "environment.env.T.$secret", "required field"),
    (
        env_with("  env: {T: {$secret: s, optional: 'yes'}}\n"),
        "environment.env.T.optional",
        "true or false",
    ),
    (env_with("  env: {T: {$secret: s, from: vault}}\n"), "environment.env.T.from", "unknown key"),
    (env_with("  approval: ask\n"), "environment.approval", "bypass | prompt"),
    ("environment: 42\n", "environment", "inline environment or the name"),
]


@pytest.mark.parametrize(("text", "path", "fragment"), NEGATIVE)
def test_environment_rule_violations(tree: Tree, text: str, path: str, fragment: str) -> None:
    find(tree.errors(text, base=HEAD), path, fragment)


def test_identical_inline_environments_dedupe_regardless_of_key_order(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        HEAD + "environment: {name: e, image: {kind: preset, name: node24}, steps: [RUN x]}\n",
    )
    tree.write(
        "agents/b.yaml",
        "name: b\nharness: codex\n"
        "environment: {steps: [RUN x], image: {name: node24, kind: preset}, name: e}\n",
    )
    result = tree.compile()
    assert result.ok
    assert list(result.environments) == ["e"]
    assert result.agents[0].environment_resource == result.agents[1].environment_resource


def test_divergent_inline_environments_conflict_naming_both_files(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml", HEAD + "environment: {name: e, image: {kind: preset, name: node24}}\n"
    )
    tree.write(
        "agents/b.yaml",
        "name: b\nharness: codex\nenvironment:\n  name: e\n  image: {kind: preset, name: node22}\n",
    )
    result = tree.compile()
    error = find(result.errors, "environment", "Conflicting generated resource")
    assert ".auto/agents/a.yaml" in error.message and ".auto/agents/b.yaml" in error.message
    assert (error.file, error.line) == (".auto/agents/b.yaml", 3)


def _two(tree: Tree, a: str, b: str) -> None:
    image = "image: {kind: preset, name: node24}"
    tree.write("agents/a.yaml", HEAD + f"environment:\n  name: e\n  {image}\n{a}")
    tree.write("agents/b.yaml", f"name: b\nharness: codex\nenvironment:\n  name: e\n  {image}\n{b}")


def test_defaults_are_filled_so_written_and_left_out_defaults_dedupe(tree: Tree) -> None:
    _two(tree, "  setupCache: {ttl: 7d}\n  approval: bypass\n  steps: []\n", "")
    result = tree.compile()
    assert result.errors == (), [str(e) for e in result.errors]
    spec = result.environments["e"].spec
    assert spec.setup_cache is not None and spec.setup_cache.ttl == timedelta(days=7)
    assert spec.to_json()["setupCache"] == {"ttl": "7d"}
    assert spec.approval == "bypass"
    assert result.agents[0].environment_resource == result.agents[1].environment_resource


def test_labels_and_annotations_merge_when_they_agree_key_by_key(tree: Tree) -> None:
    _two(
        tree,
        "  labels: {team: infra, tier: one}\n  annotations: {owner: a@acme.dev}\n",
        "  labels: {team: infra, purpose: agents}\n",
    )
    result = tree.compile()
    assert result.errors == (), [str(e) for e in result.errors]
    resource = result.environments["e"]
    assert resource.labels == {"team": "infra", "tier": "one", "purpose": "agents"}
    assert resource.annotations == {"owner": "a@acme.dev"}
    assert all(agent.environment_resource == resource for agent in result.agents)


def test_one_label_with_two_values_conflicts_naming_both_files(tree: Tree) -> None:
    _two(tree, "  labels: {team: infra}\n", "  labels: {team: web}\n")
    error = find(tree.compile().errors, "environment", "Conflicting generated resource")
    assert "labels.team is 'web' in .auto/agents/b.yaml" in error.message
    assert "'infra' in .auto/agents/a.yaml" in error.message
    _two(tree, "  annotations: {owner: x}\n", "  annotations: {owner: y}\n")
    error = find(tree.compile().errors, "environment", "annotations.owner is 'y'")
    assert ".auto/agents/a.yaml" in error.message


def test_a_differing_setup_cache_ttl_is_a_conflict(tree: Tree) -> None:
    _two(tree, "  setupCache: {ttl: 24h}\n", "")
    error = find(tree.compile().errors, "environment", "Conflicting generated resource")
    assert "spec fields setupCache" in error.message


def test_string_environment_names_a_generated_one(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml", HEAD + "environment: {name: shared, image: {kind: preset, name: node24}}\n"
    )
    tree.write("agents/b.yaml", "name: b\nharness: codex\nenvironment: shared\n")
    result = tree.compile()
    assert result.ok
    b = result.agent("b")
    assert b is not None
    assert b.environment == "shared"
    assert b.environment_resource.spec.base_image == "node:24-bookworm-slim"


def test_string_environment_that_nothing_generates(tree: Tree) -> None:
    tree.write("agents/b.yaml", "name: b\nharness: codex\nenvironment: missing\n")
    error = find(tree.compile().errors, "environment", "no environment named 'missing'")
    assert (error.file, error.line) == (".auto/agents/b.yaml", 3)


def test_a_broken_inline_environment_does_not_cascade_to_its_references(tree: Tree) -> None:
    tree.write("agents/a.yaml", HEAD + "environment: {name: shared, image: {kind: preset}}\n")
    tree.write("agents/b.yaml", "name: b\nharness: codex\nenvironment: shared\n")
    errors = tree.compile().errors
    assert [(e.file, e.path) for e in errors] == [(".auto/agents/a.yaml", "environment.image.name")]


def test_environments_directory_is_rejected(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml", HEAD + "environment: {name: e, image: {kind: preset, name: node24}}\n"
    )
    tree.write("environments/e.yaml", "name: e\n")
    error = find(tree.compile().errors, "environments", "fragments/environments")
    assert error.file == ".auto/environments"
    assert "inline" in error.message


def test_approval_prompt_under_claude_code_warns(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml", "name: a\nharness: claude-code\n" + env_with("  approval: prompt\n")
    )
    result = tree.compile()
    assert result.ok
    find(result.warnings, "environment.approval", "no effect")
