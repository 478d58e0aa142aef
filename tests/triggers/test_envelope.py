"""The payload envelope: every key camelCased by one rule, values untouched, any depth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from triggers.envelope import (
    CamelView,
    _camelize_deep,
    build_envelope,
    camel,
    camelize,
    envelope_view,
    plain,
    session_input,
)
from triggers.json_codec import dump_json, load_body


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
    # free-form maps are camelCased too, values untouched
    for key, value in body["inputs"].items():
        assert github["inputs"][camel(key)] == value
    assert session_input("d-1", envelope) == {"triggerEventId": "d-1", "payload": envelope}


def _nested(levels: int) -> list[object]:
    """`[{"a_b": [{"a_b": [... []]}]}]`, `levels` objects deep."""
    nested: list[object] = []
    cursor = nested
    for _ in range(levels):
        inner: list[object] = []
        cursor.append({"a_b": inner})
        cursor = inner
    return nested


def test_deep_bodies_take_the_iterative_walk() -> None:
    converted = camelize({"x_y": _nested(5000)})
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


@pytest.mark.parametrize(
    "number",
    [
        2**63 - 1,
        2**64 - 1,  # the largest orjson reads exactly
        2**64,
        -(2**63),  # the smallest orjson reads exactly
        -(2**63) - 1,  # 19 digits, and past 64 bits
        -(10**19) + 1,
        10**19,
        -(10**40),
    ],
)
def test_integers_at_the_64_bit_edges_stay_exact(number: int) -> None:
    loaded = load_body(b'{"n": %d, "list": [%d]}' % (number, number))
    assert loaded == {"n": number, "list": [number]}
    assert all(type(v) is int for v in (loaded["n"], loaded["list"][0]))


def test_nested_containers_of_any_kind_are_walked() -> None:
    from collections import OrderedDict

    body = {"outer_key": OrderedDict(inner_key=[[{"deep_key": 1}], ("t_u",)]), "n_1": None}
    assert camelize(body) == {
        "outerKey": {"innerKey": [[{"deepKey": 1}], ("t_u",)]},
        "n1": None,
    }


def test_the_view_of_every_real_payload_is_the_envelope(webhooks_dir: Path) -> None:
    paths = sorted(webhooks_dir.glob("*/*.json"))
    assert len(paths) > 200
    for path in paths:
        raw = path.read_bytes()
        built = build_envelope(path.parent.name, "d-1", load_body(raw))
        view = envelope_view(path.parent.name, "d-1", load_body(raw))
        assert isinstance(view["github"], CamelView)
        assert view == built, path
        assert list(view["github"]) == list(built["github"]), path
        assert dump_json(view) == dump_json(built), path  # the same bytes, keys in order


# keys that collide once camelCased (a_b / aB), and the names the envelope sets itself
_KEYS = st.sampled_from(["a_b", "aB", "a", "_a", "x_y_z", "event", "deliveryId", "delivery_id"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=6),
    max_leaves=25,
)


@given(st.dictionaries(_KEYS, _JSON, max_size=8))
def test_the_view_equals_the_envelope_whatever_the_keys(body: dict[str, object]) -> None:
    built = build_envelope("push", "d-9", body)
    view = envelope_view("push", "d-9", body)
    assert view == built
    assert built == view
    github = view["github"]
    assert list(github) == list(built["github"])
    assert len(github) == len(built["github"])
    assert dump_json(view) == dump_json(built)
    assert plain(view) == built and type(plain(view)["github"]) is dict
    for key, value in built["github"].items():
        assert key in github
        assert github[key] == value
        assert github.get(key) == value
    assert "no_such_key" not in github
    assert github.get("no_such_key", 7) == 7


def test_a_view_translates_only_what_is_read() -> None:
    body = {"pull_request": {"head": {"ref": "main"}}, "repository": {"full_name": "o/r"}}
    github = envelope_view("pull_request", "d-1", body)["github"]
    assert github["pullRequest"]["head"]["ref"] == "main"
    assert github["pullRequest"] is github["pullRequest"]  # one view per object
    assert "pullRequest" in github._values and "repository" not in github._values
    with pytest.raises(KeyError):
        github["pull_request"]  # only the camelCase names exist


def test_a_deep_view_reads_and_materializes() -> None:
    github = envelope_view("push", "d-1", {"x_y": _nested(5000), "n": 2**70})["github"]
    level = github["xY"]
    for _ in range(100):  # read lazily, a level at a time
        assert list(level[0]) == ["aB"]
        level = level[0]["aB"]
    materialized = github.materialize()  # past the stack: `camelize`'s iterative walk
    assert materialized["n"] == 2**70 and materialized["event"] == "push"
    plain_level = materialized["xY"]
    for _ in range(5000):
        assert type(plain_level[0]) is dict and list(plain_level[0]) == ["aB"]
        plain_level = plain_level[0]["aB"]
    assert plain_level == []
