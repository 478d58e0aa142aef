"""The migration from the legacy read/write roots and `readOnly` to `sandbox.mounts`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agents.sandbox.config import validate
from agents.sandbox.migrate import migrate
from tests.workers.session.sandbox.test_config import HOST, SEED_EXAMPLES


def migrated(raw: dict[str, Any]) -> Any:
    before = copy.deepcopy(raw)
    doc, problems = migrate(raw)
    assert problems == []
    assert raw == before  # the input is never changed in place
    return doc


@pytest.mark.parametrize("example", SEED_EXAMPLES)
def test_an_already_migrated_configuration_comes_back_unchanged(example: dict[str, Any]) -> None:
    assert migrated(example) == example


def test_read_roots_become_readonly_and_write_roots_writable_mounts_with_source_as_target() -> None:
    doc = migrated(
        {
            "security": {
                "sandboxReadRoots": ["/srv/reference-data"],
                "sandboxWriteRoots": ["/srv/agent-cache/pnpm"],
            }
        }
    )
    assert doc == {
        "sandbox": {
            "backend": "srt",
            "mounts": [
                {
                    "source": "/srv/reference-data",
                    "target": "/srv/reference-data",
                    "mode": "readonly",
                },
                {
                    "source": "/srv/agent-cache/pnpm",
                    "target": "/srv/agent-cache/pnpm",
                    "mode": "writable",
                },
            ],
        }
    }
    config, problems = validate(doc, host=HOST)
    assert problems == []
    assert config is not None and config.backend == "srt"


def test_the_old_fields_are_removed_and_the_rest_of_security_is_kept() -> None:
    doc = migrated({"security": {"sandboxReadRoots": ["/a"], "allowNetwork": False}})
    assert doc["security"] == {"allowNetwork": False}


def test_roots_are_appended_after_existing_mounts_and_the_backend_is_kept() -> None:
    doc = migrated(
        {
            "sandbox": {
                "backend": "microsandbox",
                "mounts": [{"source": "/srv/x", "target": "/x", "mode": "readonly"}],
                "env": {"A": "b"},
            },
            "security": {"sandboxWriteRoots": ["/srv/out"]},
        }
    )
    assert doc == {
        "sandbox": {
            "backend": "microsandbox",
            "mounts": [
                {"source": "/srv/x", "target": "/x", "mode": "readonly"},
                {"source": "/srv/out", "target": "/srv/out", "mode": "writable"},
            ],
            "env": {"A": "b"},
        }
    }


def test_a_root_already_mounted_the_same_way_is_not_added_twice() -> None:
    same = {"source": "/a", "target": "/a", "mode": "readonly"}
    doc = migrated(
        {"sandbox": {"backend": "srt", "mounts": [same]}, "security": {"sandboxReadRoots": ["/a"]}}
    )
    assert doc["sandbox"]["mounts"] == [same]


@pytest.mark.parametrize(("read_only", "mode"), [(True, "readonly"), (False, "writable")])
def test_read_only_is_replaced_by_mode_in_its_place(read_only: bool, mode: str) -> None:
    doc = migrated(
        {
            "sandbox": {
                "backend": "srt",
                "mounts": [{"source": "/a", "readOnly": read_only, "target": "/a"}],
            }
        }
    )
    (only,) = doc["sandbox"]["mounts"]
    assert list(only.items()) == [("source", "/a"), ("mode", mode), ("target", "/a")]


def test_read_only_agreeing_with_mode_is_dropped() -> None:
    doc = migrated(
        {
            "sandbox": {
                "backend": "srt",
                "mounts": [{"source": "/a", "target": "/a", "mode": "readonly", "readOnly": True}],
            }
        }
    )
    assert doc["sandbox"]["mounts"] == [{"source": "/a", "target": "/a", "mode": "readonly"}]


def test_a_contradiction_or_a_wrong_shape_stops_the_migration_naming_the_field() -> None:
    raw: dict[str, Any] = {
        "sandbox": {
            "backend": "srt",
            "mounts": [
                {"source": "/a", "target": "/a", "mode": "writable", "readOnly": True},
                {"source": "/b", "target": "/b", "readOnly": "yes"},
            ],
        },
        "security": {"sandboxReadRoots": "/c"},
    }
    doc, problems = migrate(raw)
    assert doc is raw
    assert [(p.field, p.message) for p in problems] == [
        ("security.sandboxReadRoots", "must be a list of path strings"),
        ("sandbox.mounts[0].readOnly", "true contradicts mode 'writable': remove one"),
        ("sandbox.mounts[1].readOnly", "must be true or false"),
    ]


def test_migrating_twice_changes_nothing_more() -> None:
    once = migrated(
        {
            "security": {"sandboxReadRoots": ["/a"], "sandboxWriteRoots": ["/b"]},
            "sandbox": {"mounts": [{"source": "/c", "target": "/c", "readOnly": False}]},
        }
    )
    assert migrated(once) == once
