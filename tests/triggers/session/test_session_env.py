"""Pure parts of running a session: its env with secrets, the snapshot key and its TTL."""

from __future__ import annotations

from typing import Any

import pytest

from triggers.session.env import MissingSecret, resolve_env
from triggers.session.snapshot import (
    DEFAULT_TTL_SECONDS,
    cache_files,
    files_digest,
    snapshot_key,
    ttl_seconds,
)

SPEC: dict[str, Any] = {
    "image": {"kind": "preset", "name": "node24"},
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
            {"B": "agent", "S": {"$secret": "s"}, "O": {"$secret": "gone", "optional": True}},
        ],
        {"s": "value"},
    )
    assert env == {"A": "environment", "B": "agent", "S": "value"}


def test_a_missing_required_secret_names_variable_and_secret() -> None:
    with pytest.raises(MissingSecret) as missing:
        resolve_env([{"TOKEN": {"$secret": "npm-token"}}], {})
    assert (missing.value.variable, missing.value.secret) == ("TOKEN", "npm-token")
    assert "TOKEN" in missing.value.message and "'npm-token'" in missing.value.message


def _changed(**change: Any) -> dict[str, Any]:
    return {**SPEC, **change}


def test_the_snapshot_key_changes_with_what_setup_depends_on() -> None:
    key = snapshot_key(SPEC, MOUNTS, "/workspace/b")
    assert key == snapshot_key(dict(reversed(list(SPEC.items()))), MOUNTS, "/workspace/b")
    # how the ref was written is the scope's business, not the key's
    assert key == snapshot_key(SPEC, [{**MOUNTS[0], "eventDependent": True}], "/workspace/b")
    assert key == snapshot_key(SPEC, MOUNTS, "/workspace/b", files_digest({}))
    different = [
        snapshot_key(_changed(image={"kind": "preset", "name": "node22"}), MOUNTS, "/workspace/b"),
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
    assert cache_files(spec) == ["a.lock", "b.lock"]
    assert files_digest({"a": "1", "b": None}) == files_digest({"b": None, "a": "1"})
    assert files_digest({"a": "1"}) != files_digest({"a": "2"})


def test_ttl() -> None:
    assert ttl_seconds({"setupCache": {"ttl": "30m"}}) == 1800
    assert ttl_seconds({"setupCache": {"ttl": "2d"}}) == 2 * 86400
    assert ttl_seconds({}) == DEFAULT_TTL_SECONDS == 7 * 86400
