"""Builders for matching tests: compiled agents and triggers as dataclasses, real envelopes."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agents.environment_spec import EnvironmentResource
from agents.model import CompiledAgent, Filter, FilterOp, Mount, Trigger
from triggers.envelope import build_envelope

#: an environment with only what every one has
RUNTIME = EnvironmentResource.model_validate(
    {
        "name": "runtime",
        "spec": {
            "image": {"kind": "preset", "name": "node24"},
            "baseImage": "node:24-bookworm-slim",
        },
    }
)


Envelope = dict[str, Any]
Load = Callable[..., Envelope]


def trigger(event: str, index: int = 0, **fields: Any) -> Trigger:
    """A Trigger as the compiler would make it; `key` defaults to the name or a placeholder."""
    for name in ("actions", "repositories", "branches"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    fields.setdefault("key", fields.get("name") or f"key-{event}-{index}")
    return Trigger(index=index, event=event, **fields)


def filter_(path: str, op: FilterOp, value: Any) -> Filter:
    return Filter(path=path, op=op, value=value)


def agent(
    name: str, *triggers: Trigger, repositories: tuple[str | None, ...] = ()
) -> CompiledAgent:
    """An agent whose mounts check out `repositories` (None: a mount that is not on GitHub)."""
    mounts = tuple(
        Mount(
            repository=repo or f"https://git.example.test/{name}/{i}.git",
            mount_path=f"/workspace/m{i}",
            github_repository=repo,
        )
        for i, repo in enumerate(repositories)
    )
    return CompiledAgent(
        name=name,
        harness="claude-code",
        environment="runtime",
        environment_resource=RUNTIME,
        source_file=f"agents/{name}.yaml",
        mounts=mounts,
        triggers=tuple(triggers),
    )


@cache
def _body(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _set(body: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = body
    for part in parents:
        node = node[part]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


_DELETE = object()


@pytest.fixture
def load(webhooks_dir: Path) -> Load:
    """`load("pull_request", "opened.payload.json", {"sender.type": "Bot"})` → envelope.

    Changes use the raw (snake_case) webhook keys, dotted; they apply before camelCasing.
    """

    def build(event: str, file: str, changes: Mapping[str, Any] | None = None) -> Envelope:
        body = json.loads(_body(webhooks_dir / event / file))
        for dotted, value in (changes or {}).items():
            _set(body, dotted, value)
        return build_envelope(event, f"delivery-{event}", body)

    return build


DELETE = _DELETE
