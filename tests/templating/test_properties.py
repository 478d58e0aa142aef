"""Properties over arbitrary sources and JSON contexts: only TemplateErrors, values kept literal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from templating import Dialect, TemplateError, compile_template

T = TypeVar("T")

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "b", "c", "0", "1", "payload"]), children, max_size=4
        )
    ),
    max_leaves=20,
)
CONTEXT = st.dictionaries(st.sampled_from(["a", "b", "c", "payload", "triggerEventId"]), JSON)

# Sources stitched from the pieces the syntax is about, so tokens, escapes and junk all come up.
PIECES = st.sampled_from(
    ["{{", "}}", "{{ ", " }}", "\\{{", "\\", "{%", "%}", "{#", "#}", "{", "}", "a", "b", "c",
     "payload", "triggerEventId", ".", "0", "1", "__x", " ", "\n", "|", "(", ")", "[", "]",
     "'", "+", "-", "é", "x"]
)  # fmt: skip
SOURCE = st.one_of(st.text(max_size=60), st.lists(PIECES, max_size=25).map("".join))


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(source=SOURCE, dialect=st.sampled_from(Dialect), context=CONTEXT)
def test_compile_and_render_raise_only_template_errors(
    source: str, dialect: Dialect, context: dict[str, Any]
) -> None:
    template, error = _attempt(lambda: compile_template(source, dialect))
    if template is None:
        assert error is not None
        assert error.code == "template_syntax"
        return
    assert template.source == source
    assert template.event_dependent == bool(template.tokens)
    rendered, error = _attempt(lambda: template.render(context))
    if rendered is None:
        assert error is not None
        assert error.code in ("unresolvable_token", "output_too_large")
    else:
        assert isinstance(rendered, str)


def _attempt(call: Callable[[], T]) -> tuple[T | None, TemplateError | None]:
    """Run ``call``; a TemplateError is an answer, anything else propagates and fails."""
    try:
        return call(), None
    except TemplateError as err:
        return None, err


SEGMENT = st.one_of(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.integers(min_value=0, max_value=30),
)


@settings(max_examples=200, deadline=None)
@given(path=st.lists(SEGMENT, min_size=1, max_size=6), pad=st.sampled_from(["", " ", "\t", "\n "]))
def test_dotted_paths_round_trip(path: list[str | int], pad: str) -> None:
    if not isinstance(path[0], str) or path[0] in (
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
    ):
        path[0] = "v"
    text = "{{" + pad + ".".join(str(s) for s in path) + pad + "}}"
    template = compile_template(text, Dialect.TEXT)
    assert [t.path for t in template.tokens] == [tuple(path)]


JINJA_TEXT = st.lists(
    st.sampled_from(["{{", "}}", "{%", "%}", "{#", "#}", "{{ 7*7 }}", "{% raw %}", "\\{{", "${{",
                     " github.sha ", "|upper", "__class__", "\n", "x", ""]),
    max_size=12,
).map("".join) | st.text(max_size=40)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(value=JINJA_TEXT, other=JINJA_TEXT)
def test_payload_strings_come_out_literally(value: str, other: str) -> None:
    text = compile_template("<{{ a }}|{{ b.0 }}>", Dialect.TEXT)
    assert text.render({"a": value, "b": [other]}) == f"<{value}|{other}>"
    ref = compile_template("refs/{{ payload.a }}/{{ triggerEventId }}", Dialect.REF)
    assert ref.render({"payload": {"a": value}, "triggerEventId": other}) == f"refs/{value}/{other}"
