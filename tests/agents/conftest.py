"""Helpers for agent-compiler tests: small .auto trees written into tmp_path."""

from __future__ import annotations

import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from agents import CompiledAgent, CompileResult, Diagnostic, compile_dir
from agents.file_schema import file_schema

#: the editor schema of each file kind: every file of a set that compiles must pass it
SCHEMAS = {kind: Draft202012Validator(file_schema(kind)) for kind in ("agent", "fragment")}

ENV = """\
environment:
  name: runtime
  image: {kind: preset, name: node24}
"""
BASE = "name: a\nharness: claude-code\n" + ENV


@dataclass
class Tree:
    """A .auto directory under construction."""

    root: Path

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def compile(self, secret_names: Collection[str] = ()) -> CompileResult:
        result = compile_dir(self.root, secret_names=secret_names)
        if result.ok:
            assert_schema_accepts(self.root)
        return result

    def agent(self, text: str, name: str = "a") -> CompiledAgent:
        """Compile one agent file (BASE + text) and return it, failing on any error."""
        self.write(
            f"agents/{name}.yaml", BASE.replace("name: a", f"name: {name}") + textwrap.dedent(text)
        )
        result = self.compile()
        assert result.errors == (), [str(e) for e in result.errors]
        found = result.agent(name)
        assert found is not None
        return found

    def errors(self, text: str, *, base: str = BASE) -> tuple[Diagnostic, ...]:
        self.write("agents/a.yaml", base + textwrap.dedent(text))
        result = self.compile()
        assert not result.ok
        return result.errors


def assert_schema_accepts(root: Path) -> None:
    """Every agent file under a .auto directory, and every file they import, passes its
    editor schema (agent files the agent schema, imported files the fragment schema)."""
    pending = [("agent", p) for p in sorted(root.glob("agents/*.yaml"))]
    seen: set[Path] = set()
    while pending:
        kind, path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        document = yaml.safe_load(path.read_text())
        problems = [
            f"{'.'.join(map(str, e.absolute_path)) or '(file)'}: {e.message}"
            for e in SCHEMAS[kind].iter_errors(document)
        ]
        assert not problems, f"{path} compiles but its {kind} schema refuses it: {problems}"
        imports = document.get("imports") if isinstance(document, dict) else None
        for name in imports if isinstance(imports, list) else ():
            pending.append(("fragment", (path.parent / str(name)).resolve()))


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path / ".auto")


def find(errors: Collection[Diagnostic], path: str, fragment: str) -> Diagnostic:
    """The diagnostic at ``path`` whose message contains ``fragment``."""
    for error in errors:
        if error.path == path and fragment in error.message:
            return error
    shown = "\n".join(str(e) for e in errors)
    raise AssertionError(f"no diagnostic at {path!r} containing {fragment!r} in:\n{shown}")
