"""The Grafana dashboard in deploy/ and the metric names its PromQL expressions select."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy/grafana/dashboards/hookspawn.json"

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool"}
    | {"and", "or", "unless", "inf", "nan"}
)
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def expressions(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of every panel's targets."""
    return [target["expr"] for panel in board["panels"] for target in panel["targets"]]


def selected_metrics(expr: str) -> set[str]:
    """The metric names an expression selects: not functions, keywords, label names (in
    `by (…)`, matchers `{…}`), ranges `[…]`, strings, numbers or Grafana's `$__…` variables."""
    rest = re.sub(r'"(?:[^"\\]|\\.)*"', " ", expr)
    rest = re.sub(r"\{[^}]*\}", " ", rest)
    rest = re.sub(r"\[[^\]]*\]", " ", rest)
    rest = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", rest)
    rest = re.sub(r"\$\w+", " ", rest)
    names = set()
    for match in _IDENTIFIER.finditer(rest):
        name = match.group()
        follows = rest[match.end() :].lstrip()
        if follows.startswith("(") or name.lower() in _KEYWORDS:
            continue  # a function call or an operator
        before = rest[match.start() - 1] if match.start() else " "
        if before.isdigit() or before == ".":
            continue  # the exponent or tail of a number (1e3)
        names.add(name)
    return names


def family_of(name: str, types: dict[str, str]) -> str | None:
    """The exported family a selected name belongs to, by Prometheus' naming of samples:
    `_total` of a counter, `_bucket`/`_sum`/`_count` of a histogram, a gauge as it is."""
    if types.get(name) == "gauge":
        return name
    rules = {"_total": ("counter",), "_bucket": ("histogram",), "_sum": ("histogram",)}
    rules["_count"] = ("histogram",)
    for suffix, kinds in rules.items():
        base = name.removesuffix(suffix)
        if name.endswith(suffix) and types.get(base) in kinds:
            return base
    return None
