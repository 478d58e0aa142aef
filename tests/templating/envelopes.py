"""Test envelopes built from recorded GitHub deliveries (keys in lowerCamelCase at every depth)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_SNAKE = re.compile(r"_([a-z0-9])")


def camel(value: Any) -> Any:
    """Every object key at every depth from snake_case to lowerCamelCase; values untouched."""
    if isinstance(value, dict):
        return {_SNAKE.sub(lambda m: m.group(1).upper(), k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def envelope(webhooks_dir: Path, event: str, name: str) -> dict[str, Any]:
    body = json.loads((webhooks_dir / event / name).read_text(encoding="utf-8"))
    return {"github": {"event": event, "deliveryId": f"delivery-{event}-{name}", **camel(body)}}


def session_input(env: dict[str, Any]) -> dict[str, Any]:
    return {"triggerEventId": env["github"]["deliveryId"], "payload": env}
