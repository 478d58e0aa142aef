"""The shipped examples pass `hookspawn check --strict`, event schemas included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_examples_pass_strict_check() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hookspawn.cli", "check", "--strict", str(ROOT / "examples/.auto")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: 3 agents compiled" in result.stdout
    assert "pr-review: harness claude-code" in result.stdout
