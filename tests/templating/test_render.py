"""Rendering: JSON-only lookups, scalar formatting, errors naming token and segment, size cap."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from templating import (
    MAX_TEXT_OUTPUT,
    Dialect,
    InvalidRefError,
    OutputTooLargeError,
    TemplateError,
    TemplateSyntaxError,
    UnresolvableTokenError,
    compile_template,
)

CONTEXT: dict[str, Any] = {
    "github": {
        "event": "pull_request",
        "pullRequest": {
            "number": 2,
            "draft": False,
            "merged": True,
            "score": 0.5,
            "big": 1e100,
            "title": "Fix {{ 7*7 }} and {% raw %}",
            "body": None,
            "labels": [{"name": "bug"}, {"name": "good first issue"}],
            "head": {"ref": "feature/x", "sha": "6113728f"},
            "empty": "",
        },
        "inputs": {"0": "zero", "env": "prod"},
    }
}


def text(source: str, context: dict[str, Any] = CONTEXT) -> str:
    return compile_template(source, Dialect.TEXT).render(context)


@pytest.mark.parametrize(
    ("source", "rendered"),
    [
        ("#{{ github.pullRequest.number }}", "#2"),
        ("{{ github.pullRequest.draft }}", "false"),
        ("{{ github.pullRequest.merged }}", "true"),
        ("{{ github.pullRequest.score }}", "0.5"),
        ("{{ github.pullRequest.big }}", "1e+100"),
        ("{{ github.pullRequest.head.ref }}", "feature/x"),
        ("[{{ github.pullRequest.empty }}]", "[]"),
        ("{{ github.pullRequest.labels.0.name }}", "bug"),
        ("{{ github.pullRequest.labels.1.name }}", "good first issue"),
        ("{{ github.inputs.0 }}", "zero"),
        ("{{ github.event }}/{{ github.event }}", "pull_request/pull_request"),
    ],
)
def test_scalars_render(source: str, rendered: str) -> None:
    assert text(source) == rendered


def test_float_renders_as_json_does() -> None:
    for value, shown in [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e-7, "1e-07"),
        (123456789.125, "123456789.125"),
    ]:
        assert text("{{ v }}", {"v": value}) == shown


def test_int_renders_digits() -> None:
    assert text("{{ v }}", {"v": -12345678901234567890}) == "-12345678901234567890"


def test_payload_text_is_inserted_once() -> None:
    assert text("Title: {{ github.pullRequest.title }}") == "Title: Fix {{ 7*7 }} and {% raw %}"


def test_ref_dialect_renders_against_session_input() -> None:
    template = compile_template(
        "refs/pull/{{ payload.github.pullRequest.number }}/head", Dialect.REF
    )
    assert template.render({"triggerEventId": "d-1", "payload": CONTEXT}) == "refs/pull/2/head"
    ids = compile_template("x/{{ triggerEventId }}", Dialect.REF)
    assert ids.render({"triggerEventId": "d-1", "payload": CONTEXT}) == "x/d-1"


@pytest.mark.parametrize(
    ("source", "segment", "where"),
    [
        ("{{ github.pullRequest.nope }}", "nope", "github.pullRequest"),
        ("{{ github.pullRequest.nope.deeper }}", "nope", "github.pullRequest"),
        ("{{ gitlab.x }}", "gitlab", "the payload"),
        ("{{ github.pullRequest.labels.2.name }}", "2", "github.pullRequest.labels (a list of 2)"),
        ("{{ github.pullRequest.labels.name }}", "name", "github.pullRequest.labels (a list of 2)"),
        ("{{ github.pullRequest.number.x }}", "x", "github.pullRequest.number (number)"),
        ("{{ github.pullRequest.head.ref.0 }}", "0", "github.pullRequest.head.ref (string)"),
        ("{{ github.pullRequest.body.x }}", "x", "github.pullRequest.body (null)"),
    ],
)
def test_missing_segment_names_token_and_first_missing_segment(
    source: str, segment: str, where: str
) -> None:
    with pytest.raises(UnresolvableTokenError) as caught:
        text(f"see {source} now")
    err = caught.value
    assert (err.token, err.segment, err.reason, err.found) == (source, segment, "missing", None)
    assert err.code == "unresolvable_token"
    assert err.message == f"{source}: no {segment!r} in {where}"
    assert str(err) == err.message


@pytest.mark.parametrize(
    ("source", "segment", "found", "says"),
    [
        ("{{ github.pullRequest }}", "pullRequest", "object", "is an object"),
        ("{{ github.pullRequest.labels }}", "labels", "list", "is a list"),
        ("{{ github.pullRequest.body }}", "body", "null", "is null"),
        ("{{ github.pullRequest.labels.0 }}", "0", "object", "is an object"),
    ],
)
def test_non_scalar_is_refused(source: str, segment: str, found: str, says: str) -> None:
    with pytest.raises(UnresolvableTokenError) as caught:
        text(source)
    err = caught.value
    assert (err.token, err.segment, err.reason, err.found) == (source, segment, "not_scalar", found)
    assert err.message == f"{source}: {segment!r} {says}, not a scalar"


def test_ref_root_missing_names_session_input() -> None:
    template = compile_template("{{ payload.github.after }}", Dialect.REF)
    with pytest.raises(UnresolvableTokenError) as caught:
        template.render({})
    assert caught.value.segment == "payload"
    assert caught.value.message == "{{ payload.github.after }}: no 'payload' in the session input"


class Attrs:
    """An object whose attributes must never be reachable from a template."""

    secret = "attribute"

    def __init__(self) -> None:
        self.field = "attribute"


def test_python_attributes_are_never_reachable() -> None:
    context: dict[str, Any] = {"obj": Attrs(), "s": "abc", "d": {"x": 1}}
    for source in ("{{ obj.secret }}", "{{ obj.field }}", "{{ s.upper }}", "{{ d.items }}"):
        with pytest.raises(UnresolvableTokenError) as caught:
            text(source, context)
        assert caught.value.reason == "missing"
    with pytest.raises(UnresolvableTokenError) as not_scalar:
        text("{{ obj }}", context)
    assert not_scalar.value.found == "Attrs"


def test_string_segment_does_not_index_a_list_and_int_does_not_index_a_string() -> None:
    with pytest.raises(UnresolvableTokenError):
        text("{{ s.0 }}", {"s": "abc"})
    assert text("{{ l.0 }}", {"l": ["x"]}) == "x"


def test_text_output_cap_counts_utf8_bytes() -> None:
    template = compile_template("{{ a }}", Dialect.TEXT)
    assert len(template.render({"a": "x" * MAX_TEXT_OUTPUT})) == MAX_TEXT_OUTPUT
    assert template.render({"a": "é" * (MAX_TEXT_OUTPUT // 2)}) == "é" * (MAX_TEXT_OUTPUT // 2)
    with pytest.raises(OutputTooLargeError) as caught:
        template.render({"a": "é" * (MAX_TEXT_OUTPUT // 2) + "x"})
    assert caught.value.code == "output_too_large"
    assert (caught.value.size, caught.value.limit) == (MAX_TEXT_OUTPUT + 1, MAX_TEXT_OUTPUT)
    with pytest.raises(OutputTooLargeError):
        compile_template("x" * (MAX_TEXT_OUTPUT + 1), Dialect.TEXT).render({})


def test_text_output_cap_applies_to_the_whole_render() -> None:
    template = compile_template("{{ a }}{{ a }}", Dialect.TEXT)
    half = "y" * (MAX_TEXT_OUTPUT // 2)
    assert template.render({"a": half}) == half + half
    with pytest.raises(OutputTooLargeError):
        template.render({"a": half + "y"})


def test_ref_dialect_is_not_capped_by_text_limit() -> None:
    template = compile_template("{{ payload.a }}", Dialect.REF)
    assert len(template.render({"payload": {"a": "r" * (MAX_TEXT_OUTPUT + 1)}})) > MAX_TEXT_OUTPUT


def test_lone_surrogates_in_payload_do_not_crash_the_cap() -> None:
    value = "\ud800" * 10
    assert text("{{ a }}", {"a": value}) == value


def test_huge_int_is_a_template_error() -> None:
    with pytest.raises(TemplateError):
        text("{{ n }}", {"n": 10**5000})


@pytest.mark.parametrize(
    "error",
    [
        UnresolvableTokenError("{{ a.b }}", "b", "missing", where="a"),
        UnresolvableTokenError("{{ a }}", "a", "not_scalar", "list"),
        OutputTooLargeError(70000, MAX_TEXT_OUTPUT),
        TemplateSyntaxError("{{ a|b }}", 2, 3, "filters are not allowed"),
        InvalidRefError("a..b", "contains '..'"),
    ],
)
def test_errors_pickle_with_their_fields(error: TemplateError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert vars(copy) == vars(error)
    assert str(copy) == str(error)


def test_other_json_like_containers_render_through_the_general_path() -> None:
    from types import MappingProxyType

    context = MappingProxyType({"a": MappingProxyType({"b": ("x", "y")})})
    assert compile_template("{{ a.b.1 }}", Dialect.TEXT).render(context) == "y"
