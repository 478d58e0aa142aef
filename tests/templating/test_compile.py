"""Template syntax: what compiles, what is refused at compile time, and where the error points."""

from __future__ import annotations

import pytest

from templating import (
    Dialect,
    TemplateError,
    TemplateSyntaxError,
    Token,
    compile_template,
)

ACCEPTED = [
    ("{{ a }}", ("a",)),
    ("{{a}}", ("a",)),
    ("{{ a.b.c }}", ("a", "b", "c")),
    ("{{ labels.0.name }}", ("labels", 0, "name")),
    ("{{ a.0.1 }}", ("a", 0, 1)),
    ("{{ a.10.2.3 }}", ("a", 10, 2, 3)),
    ("{{\ta.b\n}}", ("a", "b")),
    ("{{ a.true }}", ("a", "true")),
    ("{{ a.if }}", ("a", "if")),
    ("{{ _private.x }}", ("_private", "x")),
    ("{{ a._links }}", ("a", "_links")),
    ("{{ pullRequest.htmlUrl }}", ("pullRequest", "htmlUrl")),
]


@pytest.mark.parametrize(("source", "path"), ACCEPTED)
def test_dotted_paths_compile(source: str, path: tuple[str | int, ...]) -> None:
    template = compile_template(source, Dialect.TEXT)
    assert template.tokens == (Token(source, path, 1, 1),)
    assert template.event_dependent


REFUSED = [
    ("{{ a|upper }}", "filters are not allowed"),
    ("{{ a | default('x') }}", "filters are not allowed"),
    ("{{ a() }}", "calls are not allowed"),
    ("{{ a.b.c() }}", "calls are not allowed"),
    ("{{ a + 1 }}", "operators are not allowed"),
    ("{{ a ~ b }}", "operators are not allowed"),
    ("{{ not a }}", "operators are not allowed"),
    ("{{ -a }}", "operators are not allowed"),
    ("{{ a and b }}", "operators are not allowed"),
    ("{{ 7*7 }}", "operators are not allowed"),
    ("{{ a is defined }}", "tests are not allowed"),
    ("{{ a == 1 }}", "comparisons are not allowed"),
    ("{{ a if b else c }}", "conditional expressions are not allowed"),
    ("{{ 'x' }}", "literals are not allowed"),
    ("{{ 42 }}", "literals are not allowed"),
    ("{{ true }}", "literals are not allowed"),
    ("{{ none }}", "literals are not allowed"),
    ("{{ [a] }}", "literals are not allowed"),
    ("{{ a[0] }}", "subscripts with brackets are not allowed"),
    ("{{ a['b'] }}", "subscripts with brackets are not allowed"),
    ("{{ a[b] }}", "subscripts with brackets are not allowed"),
    ("{{ a[1:2] }}", "subscripts with brackets are not allowed"),
    ("{{ a.__class__ }}", "dunder segments are not allowed"),
    ("{{ __builtins__ }}", "dunder segments are not allowed"),
    ("{{ a.__x }}", "dunder segments are not allowed"),
    ("{{ }}", "empty token"),
    ("{{}}", "empty token"),
    ("{{ a . b }}", "only dotted lookups are allowed"),
    ("{{ (a) }}", "only dotted lookups are allowed"),
    ("{{ a.01 }}", "only dotted lookups are allowed"),
    ("{{ a.1_0 }}", "only dotted lookups are allowed"),
    ("{{ a.0x1 }}", "only dotted lookups are allowed"),
    ("{{ café }}", "only dotted lookups are allowed"),
    ("{{ a. }}", "only dotted lookups are allowed"),
    ("{{ .a }}", "only dotted lookups are allowed"),
    ("{{ a.-1 }}", "only dotted lookups are allowed"),
    ("{{ 0.a }}", "literals are not allowed"),
    ("{{- a -}}", "whitespace control"),
    ("{{+ a }}", "whitespace control"),
    ("{{ a {{ b }}", "only dotted lookups are allowed"),
    ("{{ a", "unterminated '{{'"),
    ("{{ a }", "unterminated '{{'"),
    ("{% if a %}x{% endif %}", "blocks ({% … %}) are not allowed"),
    ("{% raw %}", "blocks ({% … %}) are not allowed"),
    ("{%", "blocks ({% … %}) are not allowed"),
    ("{# note #}", "comments ({# … #}) are not allowed"),
    ("{#", "comments ({# … #}) are not allowed"),
]


@pytest.mark.parametrize(("source", "reason"), REFUSED)
def test_everything_but_lookups_is_refused(source: str, reason: str) -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        compile_template(source, Dialect.TEXT)
    err = caught.value
    assert reason in err.reason
    assert err.code == "template_syntax"
    assert (err.line, err.column) == (1, 1)
    assert err.token
    assert source.startswith(err.token)
    assert str(err) == err.message
    assert err.token in err.message
    assert reason in err.message


def test_error_position_and_token_text() -> None:
    source = "Review {{ a.b }}\nof {{ x.y }} and\n  then {{ c | upper }} please"
    with pytest.raises(TemplateSyntaxError) as caught:
        compile_template(source, Dialect.TEXT)
    err = caught.value
    assert (err.token, err.line, err.column) == ("{{ c | upper }}", 3, 8)
    assert err.message == "3:8: {{ c | upper }}: filters are not allowed"


def test_token_positions_are_one_based() -> None:
    template = compile_template("a {{ x }}\n\n   {{ y.0 }}", Dialect.TEXT)
    assert [(t.text, t.line, t.column) for t in template.tokens] == [
        ("{{ x }}", 1, 3),
        ("{{ y.0 }}", 3, 4),
    ]


def test_token_may_span_lines() -> None:
    template = compile_template("x {{\n  a.b\n}} y", Dialect.TEXT)
    assert template.tokens[0].path == ("a", "b")
    assert template.render({"a": {"b": 1}}) == "x 1 y"


def test_unterminated_token_quotes_the_rest_of_its_line() -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        compile_template("ok\nhere {{ github.sha\nmore", Dialect.TEXT)
    assert (caught.value.token, caught.value.line, caught.value.column) == (
        "{{ github.sha",
        2,
        6,
    )


def test_long_token_is_shortened_in_the_message_only() -> None:
    source = "{{ " + "a + " * 100 + "b }}"
    with pytest.raises(TemplateSyntaxError) as caught:
        compile_template(source, Dialect.TEXT)
    assert caught.value.token == source
    assert len(caught.value.message) < 200


def test_deeply_nested_junk_is_a_syntax_error() -> None:
    for source in ("{{" + "(" * 5000 + "}}", "{{ " + "[" * 300 + " }}"):
        with pytest.raises(TemplateSyntaxError):
            compile_template(source, Dialect.TEXT)


# --- escapes and lone braces --------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "rendered"),
    [
        ("\\{{ github.sha }}", "{{ github.sha }}"),
        ("echo $\\{{ github.sha }} is {{ x }}", "echo ${{ github.sha }} is 7"),
        ("\\{% raw %}", "{% raw %}"),
        ("\\{# c #}", "{# c #}"),
        ("a }} b", "a }} b"),
        ("}}{{ x }}}}", "}}7}}"),
        ("{ x } {x}", "{ x } {x}"),
        ("C:\\dir\\{x}", "C:\\dir\\{x}"),
        ("100% {x%} #}", "100% {x%} #}"),
        ("\\d+ \\{", "\\d+ \\{"),
        ("", ""),
    ],
)
def test_literal_text_and_escapes(source: str, rendered: str) -> None:
    assert compile_template(source, Dialect.TEXT).render({"x": 7}) == rendered


def test_escape_is_not_a_token() -> None:
    template = compile_template("\\{{ github.sha }}", Dialect.TEXT)
    assert template.tokens == ()
    assert not template.event_dependent


def test_backslash_before_a_real_token_is_the_escape() -> None:
    # `\\{{` is a backslash followed by the escape: a literal backslash then `{{`.
    assert compile_template("\\\\{{ x }}", Dialect.TEXT).render({}) == "\\{{ x }}"


# --- dialects -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "refs/pull/{{ payload.github.pullRequest.number }}/head",
        "{{payload.github.pullRequest.head.ref}}",
        "spawn-{{ triggerEventId }}",
        "main",
    ],
)
def test_ref_dialect_roots(source: str) -> None:
    template = compile_template(source, Dialect.REF)
    assert template.dialect is Dialect.REF
    assert all(t.path[0] in ("payload", "triggerEventId") for t in template.tokens)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            "refs/pull/{{ github.pullRequest.number }}/head",
            "write payload.github.pullRequest.number",
        ),
        ("{{ sha }}", "write payload.sha"),
        ("{{ triggerEventId.x }}", "triggerEventId is a string"),
        ("{{ payload }}", "payload is an object"),
    ],
)
def test_ref_dialect_refuses_other_roots(source: str, reason: str) -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        compile_template(source, Dialect.REF)
    assert reason in caught.value.reason


def test_text_dialect_rejects_payload_prefix() -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        compile_template("Review #{{ payload.github.pullRequest.number }}", Dialect.TEXT)
    err = caught.value
    assert "drop the 'payload.' prefix" in err.reason
    assert "write github.pullRequest.number" in err.reason
    assert (err.line, err.column) == (1, 9)


def test_text_dialect_accepts_payload_paths() -> None:
    template = compile_template("Review #{{ github.pullRequest.number }}", Dialect.TEXT)
    assert template.tokens[0].path == ("github", "pullRequest", "number")


def test_dialect_accepts_its_string_value() -> None:
    template = compile_template("{{ a }}", Dialect("text"))
    assert template.dialect is Dialect.TEXT
    assert str(Dialect.REF) == "ref"


def test_templates_compare_by_identity() -> None:
    first = compile_template("{{ a }}", Dialect.TEXT)
    second = compile_template("{{ a }}", Dialect.TEXT)
    assert first != second
    assert len({first, second, first}) == 2


def test_all_errors_share_one_base() -> None:
    with pytest.raises(TemplateError):
        compile_template("{{ a|b }}", Dialect.TEXT)
