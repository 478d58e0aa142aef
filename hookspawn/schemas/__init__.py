"""The agent-file JSON Schemas shipped with hookspawn (editors point at these files).

`agent.schema.json` and `fragment.schema.json` are generated from agents.file_schema by
scripts/build_agent_docs.py; a test keeps them current.
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.file_schema import KINDS, file_schema

__all__ = ["KINDS", "schema_path", "schema_text"]

_HERE = Path(__file__).resolve().parent


def schema_path(kind: str) -> Path:
    """The shipped schema file of `kind` (agent or fragment)."""
    return _HERE / f"{kind}.schema.json"


def schema_text(kind: str) -> str:
    """The schema of `kind` as the shipped file holds it (generated from the compiler's model)."""
    return json.dumps(file_schema(kind), indent=2, ensure_ascii=False) + "\n"
