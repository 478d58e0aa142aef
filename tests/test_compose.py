"""compose.yaml runs real hookspawn subcommands against a durable Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from workers.cli import _parser

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def test_every_hookspawn_command_is_a_real_subcommand(compose: dict[str, Any]) -> None:
    commands = [s["command"] for s in compose["services"].values() if "command" in s]
    hookspawn = [c for c in commands if c[0] == "hookspawn"]
    assert {c[1] for c in hookspawn} == {"web", "worker"}
    for command in hookspawn:
        args = _parser().parse_args(command[1:])  # exits (fails the test) on a bad command line
        assert args.command == command[1]
    assert ["hookspawn", "check"] not in commands


def test_redis_is_durable(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    assert redis["image"].startswith("redis:7")
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    assert "--maxmemory-policy noeviction" in command
    assert any(v.endswith(":/data") for v in redis["volumes"])
    assert "healthcheck" in redis


def test_services_and_replicas(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["flower"]["profiles"] == ["flower"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["HOOKSPAWN_REDIS_URL"].startswith("redis://redis:6379")
        assert "healthcheck" in services[name]
