"""The payload envelope: every key camelCased by one rule, values untouched, any depth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triggers.envelope import (
    _camelize_deep,
    build_envelope,
    camel,
    camelize,
    dump_json,
    load_body,
    session_input,
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("pull_request", "pullRequest"),
        ("html_url", "htmlUrl"),
        ("head", "head"),
        ("_links", "_links"),
        ("ref_type", "refType"),
        ("a_1b", "a1b"),
    ],
)
def test_camel(key: str, expected: str) -> None:
    assert camel(key) == expected


def test_envelope_of_a_real_payload(webhooks_dir: Path) -> None:
    body = json.loads((webhooks_dir / "workflow_dispatch/payload.json").read_text())
    envelope = build_envelope("workflow_dispatch", "d-1", body)
    github = envelope["github"]
    assert github["event"] == "workflow_dispatch"
    assert github["deliveryId"] == "d-1"
    # free-form maps are camelCased too (SPEC §4), values untouched
    for key, value in body["inputs"].items():
        assert github["inputs"][camel(key)] == value
    assert session_input("d-1", envelope) == {"triggerEventId": "d-1", "payload": envelope}


def test_deep_bodies_take_the_iterative_walk() -> None:
    nested: list[object] = []
    cursor = nested
    for _ in range(5000):
        inner: list[object] = []
        cursor.append({"a_b": inner})
        cursor = inner
    converted = camelize({"x_y": nested})
    level = converted["xY"]
    for _ in range(5000):
        assert list(level[0]) == ["aB"]
        level = level[0]["aB"]
    assert level == []


def test_recursive_and_iterative_walks_agree(webhooks_dir: Path) -> None:
    for path in sorted(webhooks_dir.glob("*/*.json"))[:60]:
        body = json.loads(path.read_text())
        assert camelize(body) == _camelize_deep(body), path


def test_integers_of_any_size_stay_exact() -> None:
    big = 2**70
    loaded = load_body(json.dumps({"n": big, "f": 1.5, "s": "12345678901234567890"}).encode())
    assert loaded == {"n": big, "f": 1.5, "s": "12345678901234567890"}
    assert isinstance(loaded["n"], int)
    assert json.loads(dump_json(loaded)) == loaded
    assert load_body(b'{"n": 1}') == {"n": 1}


def test_nested_containers_of_any_kind_are_walked() -> None:
    from collections import OrderedDict

    body = {"outer_key": OrderedDict(inner_key=[[{"deep_key": 1}], ("t_u",)]), "n_1": None}
    assert camelize(body) == {
        "outerKey": {"innerKey": [[{"deepKey": 1}], ("t_u",)]},
        "n1": None,
    }
