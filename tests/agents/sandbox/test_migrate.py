"""The migration from the legacy read/write roots and `readOnly` to `sandbox.mounts`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agents.sandbox.config import Problem, validate
from agents.sandbox.migrate import migrate
from tests.agents.sandbox.test_config import HOST, SEED_EXAMPLES


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


def test_a_root_in_both_lists_becomes_one_writable_mount_and_says_so() -> None:
    notes: list[str] = []
    doc, problems = migrate(
        {"security": {"sandboxReadRoots": ["/a", "/b"], "sandboxWriteRoots": ["/a"]}}, notes
    )
    assert problems == []
    assert doc == {
        "sandbox": {
            "backend": "srt",
            "mounts": [
                {"source": "/b", "target": "/b", "mode": "readonly"},
                {"source": "/a", "target": "/a", "mode": "writable"},
            ],
        }
    }
    assert notes == [
        "/a is in both security.sandboxReadRoots and sandboxWriteRoots: one writable mount"
    ]
    assert validate(doc, host=HOST)[1] == []


def test_with_srt_a_read_root_inside_a_writable_mount_is_dropped_and_says_so() -> None:
    notes: list[str] = []
    doc, problems = migrate(
        {
            "sandbox": {
                "mounts": [{"source": "/srv/cache", "target": "/srv/cache", "readOnly": False}]
            },
            "security": {
                "sandboxReadRoots": ["/srv/out/ref", "/srv/cache/pnpm/", "/srv/other"],
                "sandboxWriteRoots": ["/srv/out"],
            },
        },
        notes,
    )
    assert problems == []
    assert [(m["target"], m["mode"]) for m in doc["sandbox"]["mounts"]] == [  # type: ignore[index]
        ("/srv/cache", "writable"),
        ("/srv/other", "readonly"),
        ("/srv/out", "writable"),
    ]
    assert notes == [
        "security.sandboxReadRoots /srv/out/ref lies inside the writable mount /srv/out: "
        "dropped (srt mounts only add access, so it would stay writable there)",
        "security.sandboxReadRoots /srv/cache/pnpm/ lies inside the writable mount /srv/cache: "
        "dropped (srt mounts only add access, so it would stay writable there)",
    ]
    assert validate(doc, host=HOST)[1] == []


def test_a_microsandbox_keeps_a_read_root_nested_in_a_writable_one() -> None:
    """A VM mount nested in another keeps its own mode: only srt merges or drops."""
    notes: list[str] = []
    doc, _ = migrate(
        {
            "sandbox": {"backend": "microsandbox", "mounts": []},
            "security": {"sandboxReadRoots": ["/srv/out/ref"], "sandboxWriteRoots": ["/srv/out"]},
        },
        notes,
    )
    assert notes == []
    assert len(doc["sandbox"]["mounts"]) == 2  # type: ignore[index]
    assert validate(doc, host=HOST)[1] == []


def test_a_root_the_check_refuses_on_its_own_is_dropped_with_the_reason() -> None:
    """What `sandbox check` says of each legacy root as a one-mount configuration (the host's
    answers included) decides: a refused root is dropped, the reason in `notes`."""
    seen: list[object] = []

    def check(doc: object) -> list[Problem]:
        seen.append(doc)
        mount = doc["sandbox"]["mounts"][0]  # type: ignore[index]
        if mount["source"] == "/srv/gone":
            return [Problem("sandbox.mounts[0].source", "/srv/gone does not exist on this host")]
        return []

    notes: list[str] = []
    doc, problems = migrate(
        {"security": {"sandboxReadRoots": ["/srv/gone", "/srv/ref"]}}, notes, check=check
    )
    assert problems == []
    assert doc == {
        "sandbox": {
            "backend": "srt",
            "mounts": [{"source": "/srv/ref", "target": "/srv/ref", "mode": "readonly"}],
        }
    }
    assert notes == [
        "security.sandboxReadRoots /srv/gone: dropped, since /srv/gone does not exist on this host"
    ]
    assert seen[0] == {
        "sandbox": {
            "backend": "srt",
            "mounts": [{"source": "/srv/gone", "target": "/srv/gone", "mode": "readonly"}],
        }
    }


def test_a_root_touching_a_protected_path_is_dropped_by_the_rules_check() -> None:
    notes: list[str] = []
    doc, problems = migrate(
        {"security": {"sandboxReadRoots": ["/home/op/.ssh", "/srv/ref"]}},
        notes,
        check=lambda d: validate(d, host=HOST)[1],
    )
    assert problems == []
    assert [m["target"] for m in doc["sandbox"]["mounts"]] == ["/srv/ref"]  # type: ignore[index]
    (note,) = notes
    assert note.startswith("security.sandboxReadRoots /home/op/.ssh: dropped, since ")
    assert "a security-relevant path of the host home" in note
