"""`hookspawn schema [agent|fragment]`: the editor schema of a file as written, shipped in the
package, accepting what compiles and refusing a misspelt key; `init` points editors at it."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from agents import compile_dir
from agents.environments import PRESETS
from agents.file_schema import file_schema
from agents.model import Capabilities
from hookspawn import cli
from hookspawn.schemas import schema_path, schema_text
from tests.agents.conftest import assert_schema_accepts

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / ".auto"


def printed(kind: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli.main(["schema", *kind]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def test_schema_prints_the_agent_schema_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    agent = printed([], capsys)
    Draft202012Validator.check_schema(agent)
    assert agent["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert agent == printed(["agent"], capsys)
    # a file as written: harness and environment may come from imports
    assert agent["required"] == ["name"]
    fragment = printed(["fragment"], capsys)
    Draft202012Validator.check_schema(fragment)
    assert "required" not in fragment
    assert fragment["properties"] == agent["properties"]


def test_an_unknown_kind_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["schema", "environment"])
    assert caught.value.code == 2
    assert "invalid choice: 'environment'" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["agent", "fragment"])
def test_the_shipped_schema_files_are_current(kind: str) -> None:
    # regenerate with: python scripts/build_agent_docs.py
    assert schema_path(kind).read_text() == schema_text(kind)


def test_the_schema_carries_the_compilers_enums_patterns_and_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = printed([], capsys)
    defs = schema["$defs"]
    caps = defs["auth"]["properties"]["capabilities"]
    assert caps["default"] == Capabilities().to_json()
    assert caps["properties"]["contents"] == {
        "description": caps["properties"]["contents"]["description"],
        "enum": ["none", "read", "write"],
        "default": "write",
    }
    assert caps["properties"]["merge"]["enum"] == ["none", "write"]
    image = defs["environment"]["properties"]["image"]
    assert image["properties"]["name"]["enum"] == list(PRESETS)
    assert schema["properties"]["harness"]["enum"] == ["claude-code", "codex"]
    assert defs["mount"]["properties"]["depth"]["default"] == 1
    # ends where nothing follows: Python's `$` would also match before a final newline
    assert schema["properties"]["name"]["pattern"] == r"^[A-Za-z0-9_.-]{1,128}(?![\s\S])"
    assert "pull_request" in defs["trigger"]["properties"]["event"]["enum"]

    def every_property(node: Any) -> list[tuple[str, Any]]:
        found = []
        if isinstance(node, dict):
            for key, value in (node.get("properties") or {}).items():
                found.append((key, value))
            for value in node.values():
                found += every_property(value)
        return found

    described = every_property(schema)
    assert len(described) > 60
    # every field says what it is (a reference says it in the definition it names)
    bare = [key for key, value in described if not (value.get("description") or "$ref" in value)]
    assert bare == []
    assert all(definition.get("description") for definition in defs.values())


def test_the_schema_accepts_every_example_file() -> None:
    assert compile_dir(EXAMPLES).ok
    assert_schema_accepts(EXAMPLES)  # agents/*.yaml and every file they import
    fragments = sorted((EXAMPLES / "fragments").rglob("*.yaml"))
    assert len(fragments) == 2


MISSPELT = [
    ((), "harnes", "claude-code"),
    (("mounts", 0), "mountpath", "/w"),
    (("mounts", 0, "auth", "capabilities"), "pullrequests", "read"),
    (("triggers", 0), "filter", []),
    (("triggers", 0, "filters", 0), "regex", "x"),
    (("environment",), "imagee", {"kind": "preset", "name": "node24"}),
    (("environment", "setup", 0, "cache"), "file", ["package-lock.json"]),
    (("tools", 0), "allowed", ["get_me"]),
]

AGENT = """\
name: a
harness: claude-code
environment:
  name: runtime
  image: {kind: preset, name: node24}
  setup:
    - name: deps
      commands: [npm ci]
      cache: {key: npm-v1, files: [package-lock.json], paths: [/home/user/.npm]}
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w
    ref: main
    auth: {kind: githubApp, capabilities: {contents: read, pullRequests: write, issues: none}}
triggers:
  - kind: github
    event: issue_comment
    filters:
      - {path: github.comment.authorAssociation, in: [OWNER, MEMBER]}
tools:
  - kind: github
"""


@pytest.mark.parametrize(("where", "key", "value"), MISSPELT)
def test_a_misspelt_key_is_refused_by_the_schema_and_the_compiler(
    tmp_path: Path, where: tuple[str | int, ...], key: str, value: Any
) -> None:
    validator = Draft202012Validator(json.loads(schema_text("agent")))
    good = yaml.safe_load(AGENT)
    assert list(validator.iter_errors(good)) == []
    bad = copy.deepcopy(good)
    node = bad
    for step in where:
        node = node[step]
    node[key] = value
    errors = list(validator.iter_errors(bad))
    assert errors, f"the schema accepts the misspelt key {key!r}"
    # (under a oneOf, the reason is in the error's context: what editors show beneath it)
    reasons = [e.message for e in errors] + [c.message for e in errors for c in e.context or ()]
    assert any(f"'{key}' was unexpected" in reason for reason in reasons), reasons
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.yaml").write_text(yaml.safe_dump(bad))
    compiled = compile_dir(tmp_path)
    assert any(f"unknown key {key!r}" in e.message for e in compiled.errors), compiled.errors


def test_init_points_each_starter_file_at_its_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("HOOKSPAWN_")]:
        monkeypatch.delenv(name)
    assert cli.main(["init", "--repository", "acme/widgets"]) == 0
    # the tree moves (committed, cloned elsewhere): its schema lines still hold
    moved = tmp_path / "elsewhere" / ".auto"
    moved.parent.mkdir()
    (tmp_path / ".auto").rename(moved)
    starters = sorted(moved.rglob("*.yaml"))
    assert len(starters) == 3
    for path in starters:
        first = path.read_text().splitlines()[0]
        prefix = "# yaml-language-server: $schema="
        assert first.startswith(prefix), first
        written = first[len(prefix) :]
        assert not written.startswith("/") and ":" not in written, written
        kind = "agent" if path.parent.name == "agents" else "fragment"
        target = (path.parent / written).resolve()
        assert target == moved / ".schema" / f"{kind}.json"
        assert json.loads(target.read_text())["title"] == f"hookspawn {kind} file"
    assert compile_dir(moved).ok
    assert_schema_accepts(moved)


def test_schema_write_refreshes_the_trees_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / ".auto"
    (tree / ".schema").mkdir(parents=True)
    (tree / ".schema" / "agent.json").write_text("{}")
    assert cli.main(["schema", "--write", str(tree)]) == 0
    for kind in ("agent", "fragment"):
        written = json.loads((tree / ".schema" / f"{kind}.json").read_text())
        assert written == file_schema(kind)
    assert f"wrote {tree / '.schema' / 'agent.json'}" in capsys.readouterr().out
    assert cli.main(["schema", "--write", str(tmp_path / "missing")]) == 2


def test_docs_agents_md_is_current_and_covers_every_field() -> None:
    from agents.file_docs import agent_docs

    # regenerate with: python scripts/build_agent_docs.py
    text = (ROOT / "docs" / "agents.md").read_text()
    assert text == agent_docs()
    for field in ("systemPrompt", "harness", "setupCache", "cache", "$secret", "capabilities"):
        assert f"`{field}`" in text, field
    for preset in PRESETS:
        assert f"`{preset}`" in text
    assert "(docs/agents.md)" in (ROOT / "README.md").read_text()
