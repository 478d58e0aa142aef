"""The .auto tree the agents' tests write (tests/agents/conftest.py), for check's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.conftest import Tree


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path / ".auto")
