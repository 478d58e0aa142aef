"""Pure parts of running a session: its env with secrets, the snapshot key and its TTL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from agents.environment_spec import EnvironmentSpec, SecretRef, parse_ttl
from triggers.session.env import MissingSecret, resolve_env
from triggers.session.snapshot import files_digest, snapshot_key

RAW: dict[str, Any] = {
    "image": {"kind": "preset", "name": "node24"},
    "baseImage": "node:24-bookworm-slim",
    "steps": ["RUN true"],
    "setup": [{"name": "deps", "commands": ["npm ci"], "cache": {"key": "v1", "paths": []}}],
    "env": {},
}
MOUNTS = [
    {
        "url": "https://github.com/a/b.git",
        "mountPath": "/workspace/b",
        "depth": 1,
        "ref": "main",
        "auth": "githubApp",
        "capabilities": {"contents": "read"},
        "eventDependent": False,
    }
]


def test_env_layers_literals_and_secrets() -> None:
    env = resolve_env(
        [
            {"A": "environment", "B": "environment"},
            {
                "B": "agent",
                "S": SecretRef(secret="s"),
                "O": SecretRef(secret="gone", optional=True),
            },
        ],
        {"s": "value"},
    )
    assert env == {"A": "environment", "B": "agent", "S": "value"}


def test_a_missing_required_secret_names_variable_and_secret() -> None:
    with pytest.raises(MissingSecret) as missing:
        resolve_env([{"TOKEN": SecretRef(secret="npm-token")}], {})
    assert (missing.value.variable, missing.value.secret) == ("TOKEN", "npm-token")
    assert "TOKEN" in missing.value.message and "'npm-token'" in missing.value.message


def _changed(**change: Any) -> EnvironmentSpec:
    return EnvironmentSpec.model_validate({**RAW, **change})


SPEC = _changed()


def test_the_snapshot_key_changes_with_what_setup_depends_on() -> None:
    key = snapshot_key(SPEC, MOUNTS, "/workspace/b")
    assert key == snapshot_key(_changed(env={"X": "y"}, approval="prompt"), MOUNTS, "/workspace/b")
    # how the ref was written is the scope's business, not the key's
    assert key == snapshot_key(SPEC, [{**MOUNTS[0], "eventDependent": True}], "/workspace/b")
    assert key == snapshot_key(SPEC, MOUNTS, "/workspace/b", files_digest({}))
    different = [
        snapshot_key(_changed(image={"kind": "preset", "name": "node22"}), MOUNTS, "/workspace/b"),
        snapshot_key(_changed(image={"kind": "base", "ref": "node:24"}), MOUNTS, "/workspace/b"),
        snapshot_key(_changed(steps=["RUN false"]), MOUNTS, "/workspace/b"),
        snapshot_key(
            _changed(
                setup=[{"name": "deps", "commands": ["npm i"], "cache": {"key": "v1", "paths": []}}]
            ),
            MOUNTS,
            "/workspace/b",
        ),
        snapshot_key(
            _changed(
                setup=[
                    {"name": "deps", "commands": ["npm ci"], "cache": {"key": "v2", "paths": []}}
                ]
            ),
            MOUNTS,
            "/workspace/b",
        ),
        snapshot_key(SPEC, [{**MOUNTS[0], "mountPath": "/workspace/c"}], "/workspace/b"),
        snapshot_key(SPEC, MOUNTS, "/workspace/b/sub"),
        snapshot_key(SPEC, [{**MOUNTS[0], "ref": "refs/pull/9/head"}], "/workspace/b"),
        snapshot_key(SPEC, [{**MOUNTS[0], "auth": "none", "capabilities": None}], "/workspace/b"),
        snapshot_key(SPEC, [{**MOUNTS[0], "capabilities": {"contents": "write"}}], "/workspace/b"),
        snapshot_key(SPEC, MOUNTS, "/workspace/b", files_digest({"package-lock.json": "ab"})),
        snapshot_key(SPEC, MOUNTS, "/workspace/b", files_digest({"package-lock.json": None})),
    ]
    assert key not in different
    assert len(set(different)) == len(different)


def test_cache_files_are_every_entry_s_files_once() -> None:
    spec = _changed(
        setup=[
            {"name": "a", "commands": ["x"], "cache": {"key": "k", "files": ["a.lock", "b.lock"]}},
            {"name": "b", "commands": ["y"]},
            {"name": "c", "commands": ["z"], "cache": {"key": "k", "files": ["b.lock"]}},
        ]
    )
    assert spec.cache_files == ["a.lock", "b.lock"]
    assert files_digest({"a": "1", "b": None}) == files_digest({"b": None, "a": "1"})
    assert files_digest({"a": "1"}) != files_digest({"a": "2"})


def test_the_key_of_a_spec_as_stored_is_the_one_it_always_had() -> None:
    """Snapshots saved before the environment was typed are still found: the key of a stored
    spec is the digest the dict-reading code computed for it."""
    spec = EnvironmentSpec.model_validate(
        {
            "image": {"kind": "preset", "name": "node24"},
            "baseImage": "node:24-bookworm-slim",
            "steps": ["apt-get install -y jq"],
            "setup": [
                {
                    "name": "deps",
                    "commands": ["npm ci"],
                    "cache": {
                        "key": "npm",
                        "files": ["package-lock.json"],
                        "paths": ["/home/user/.npm"],
                    },
                },
                {"name": "build", "commands": ["npm run build", "echo done"]},
            ],
            "setupCache": {"ttl": "24h"},
            "resources": {"memoryMB": 2048},
            "env": {"NODE_ENV": "production", "TOKEN": {"$secret": "npm-token", "optional": False}},
            "approval": "prompt",
        }
    )
    mount = {
        "url": "https://github.com/acme/app.git",
        "mountPath": "/workspace/app",
        "ref": "main",
        "depth": 1,
        "auth": "none",
        "capabilities": None,
    }
    assert snapshot_key(spec, [mount], "/workspace/app", "abc") == (
        "2d2b18aa1839dcfeff18307d034112ca"
    )


def test_ttl() -> None:
    assert parse_ttl("30m") == timedelta(minutes=30)
    assert parse_ttl("2d") == timedelta(days=2)
    assert _changed(setupCache={"ttl": "45s"}).snapshot_ttl == timedelta(seconds=45)
    # a spec compiled before the default was filled in has none: the default applies
    assert SPEC.setup_cache is None and SPEC.snapshot_ttl == timedelta(days=7)
    for wrong in ("0d", "7w", "1.5h", "", "d"):
        with pytest.raises(ValueError, match="not a duration like 30m"):
            parse_ttl(wrong)
        with pytest.raises(ValidationError, match=r"setupCache\.ttl"):
            _changed(setupCache={"ttl": wrong})
