"""The project's own lint and type gates run as part of `pytest`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import type_gate

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint() -> None:
    result = run(str(BIN / "ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run(str(BIN / "ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(600)
def test_mypy_strict() -> None:
    # started in the background as the run began (tests/type_gate.py): the result is the same
    result = type_gate.result(timeout=590)
    assert result.returncode == 0, result.output
