"""Helpers for agent-compiler tests: small .auto trees written into tmp_path."""

from __future__ import annotations

import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents import CompiledAgent, CompileResult, Diagnostic, compile_dir

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
        return compile_dir(self.root, secret_names=secret_names)

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
