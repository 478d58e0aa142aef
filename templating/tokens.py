"""Token syntax: split a source into literal text and ``{{ path }}`` tokens, checked with jinja2.

Syntax:

* ``{{ a.b.0.c }}`` is a token: a dotted path whose segments are ASCII names
  (``[A-Za-z_][A-Za-z0-9_]*``) or list indexes (``0`` or digits without a leading
  zero). Whitespace is allowed just inside the braces, not around the dots.
* ``\\{{`` writes a literal ``{{`` (and ``\\{%``, ``\\{#`` write ``{%``, ``{#``).
  No other backslash is special: ``\\d`` stays ``\\d``.
* A ``}}`` that closes no token is literal text (it has no meaning on its own, and
  a prompt may quote ``\\{{ x }}``, whose ``}}`` is then literal).
* ``{%`` and ``{#`` (jinja blocks and comments) are refused, as is anything else in
  braces: filters, calls, operators, tests, literals, bracket subscripts, and
  segments starting with ``__`` (dunders).

Each token's inner text is parsed by jinja2's own parser; the resulting AST must be
exactly a chain of ``Name``/``Getattr``/``Getitem(Const int)`` nodes equal to the
path read by the grammar above, and when it is not, the AST says what is wrong
(e.g. "filters are not allowed").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import jinja2
from jinja2 import nodes

from templating.dialect import Dialect
from templating.errors import TemplateSyntaxError

__all__ = ["Token", "scan"]


@dataclass(frozen=True)
class Token:
    """One ``{{ ... }}`` occurrence in a template source."""

    text: str  # as written, braces included
    path: tuple[str | int, ...]  # str segments are object keys, int segments list indexes
    line: int  # 1-based, of the opening braces
    column: int  # 1-based, in characters


_MARK = re.compile(r"\\\{[{%#]|\{\{|\{%|\{#")
_PATH = re.compile(
    r"[ \t\r\n]*([A-Za-z_][A-Za-z0-9_]*(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|0|[1-9][0-9]*))*)[ \t\r\n]*",
    re.ASCII,
)
_QUOTE_LIMIT = 80  # characters of an unterminated construct quoted in an error
_CLASSIFY_LIMIT = 512  # longer inner text is refused without asking jinja why
_ENV = jinja2.Environment(autoescape=False)  # noqa: S701 - parses only; never renders

_REF_ROOTS = ("payload", "triggerEventId")

# jinja2 AST node → why it is refused (the first entry the node is an instance of wins).
_REFUSED: tuple[tuple[type[nodes.Node], str], ...] = (
    (nodes.Filter, "filters are not allowed"),
    (nodes.Test, "tests are not allowed"),
    (nodes.Call, "calls are not allowed"),
    (nodes.Compare, "comparisons are not allowed"),
    (nodes.CondExpr, "conditional expressions are not allowed"),
    (nodes.BinExpr, "operators are not allowed"),
    (nodes.UnaryExpr, "operators are not allowed"),
    (nodes.Concat, "operators are not allowed"),
    (nodes.Literal, "literals are not allowed"),
    (nodes.Slice, "subscripts with brackets are not allowed"),
)


def scan(source: str, dialect: Dialect) -> tuple[tuple[str, ...], tuple[Token, ...]]:
    """Split ``source`` into literal chunks and tokens (``len(chunks) == len(tokens) + 1``)."""
    chunks: list[str] = []
    tokens: list[Token] = []
    pending: list[str] = []  # literal pieces since the last token
    pos = 0
    line, line_start, counted = 1, 0, 0  # position bookkeeping, advanced token by token
    for match in _MARK.finditer(source):
        start = match.start()
        if start < pos:  # inside a token already consumed
            continue
        mark = match.group()
        pending.append(source[pos:start])
        if mark[0] == "\\":
            pending.append(mark[1:])
            pos = match.end()
            continue
        if mark != "{{":
            _refuse_block(source, start, mark)
        close = source.find("}}", match.end())
        if close < 0:
            _fail(source, start, _quote(source[start:]), "unterminated '{{' (no closing '}}')")
        text = source[start : close + 2]
        newlines = source.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = source.rfind("\n", counted, start) + 1
        counted = start
        column = start - line_start + 1
        path = _path_or_reason(source[match.end() : close])
        if isinstance(path, str):
            raise TemplateSyntaxError(text, line, column, path)
        _check_root(text, path, line, column, dialect)
        chunks.append("".join(pending))
        pending.clear()
        tokens.append(Token(text, path, line, column))
        pos = close + 2
    pending.append(source[pos:])
    chunks.append("".join(pending))
    return tuple(chunks), tuple(tokens)


@functools.lru_cache(maxsize=4096)
def _path_or_reason(inner: str) -> tuple[str | int, ...] | str:
    """The path of a token's inner text, or why it is refused (cached: agents repeat tokens)."""
    match = _PATH.fullmatch(inner)
    if match is None:
        return _why_refused(inner)
    path: tuple[str | int, ...] = tuple(
        int(seg) if seg[0].isdigit() else seg for seg in match.group(1).split(".")
    )
    for seg in path:
        if isinstance(seg, str) and seg.startswith("__"):
            return f"dunder segments are not allowed ({seg!r})"
    # The grammar accepted it; jinja's parser must read the same lookup chain.
    try:
        expr = _parse_expression(inner)
    except jinja2.TemplateSyntaxError as exc:
        return _jinja_reason(exc)
    if _lookup_chain(expr) != path:
        return _classify(expr, inner)
    return path


def _check_root(
    text: str, path: tuple[str | int, ...], line: int, column: int, dialect: Dialect
) -> None:
    root = path[0]
    if dialect == "ref":
        if root not in _REF_ROOTS:
            rest = ".".join(str(s) for s in path)
            reason = (
                "ref templates render against the session input {triggerEventId, payload}: "
                f"write payload.{rest}"
            )
        elif root == "triggerEventId" and len(path) > 1:
            reason = "triggerEventId is a string and has no fields"
        elif root == "payload" and len(path) == 1:
            reason = (
                "payload is an object: name a value in it, e.g. payload.github.pullRequest.number"
            )
        else:
            return
    elif root == "payload":
        rest = ".".join(str(s) for s in path[1:]) or "github.…"
        reason = (
            "text templates render against the payload itself: "
            f"drop the 'payload.' prefix (write {rest})"
        )
    else:
        return
    raise TemplateSyntaxError(text, line, column, reason)


def _refuse_block(source: str, start: int, mark: str) -> None:
    closer = "%}" if mark == "{%" else "#}"
    what = "blocks" if mark == "{%" else "comments"
    end = source.find(closer, start + 2)
    text = source[start : end + 2] if end >= 0 else _quote(source[start:])
    _fail(
        source,
        start,
        _quote(text),
        f"{what} ({mark} … {closer}) are not allowed; write \\{mark} for a literal {mark}",
    )


def _fail(source: str, start: int, text: str, reason: str) -> None:
    line, column = _position(source, start)
    raise TemplateSyntaxError(text, line, column, reason)


def _position(source: str, index: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, index) + 1
    return source.count("\n", 0, index) + 1, index - line_start + 1


def _quote(text: str) -> str:
    text = text.split("\n", 1)[0]
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 1] + "…"


def _parse_expression(inner: str) -> nodes.Expr:
    template = _ENV.parse("{{" + inner + "}}")
    [output] = template.body
    assert isinstance(output, nodes.Output)
    [expr] = output.nodes
    assert isinstance(expr, nodes.Expr)
    return expr


def _lookup_chain(expr: nodes.Node) -> tuple[str | int, ...] | None:
    """The path when ``expr`` is only Name/Getattr/Getitem(int Const) nodes, else None."""
    reversed_path: list[str | int] = []
    node = expr
    while True:
        if isinstance(node, nodes.Name):
            reversed_path.append(node.name)
            return tuple(reversed(reversed_path))
        if isinstance(node, nodes.Getattr):
            reversed_path.append(node.attr)
        elif isinstance(node, nodes.Getitem) and _is_int_const(node.arg):
            assert isinstance(node.arg, nodes.Const)
            reversed_path.append(node.arg.value)
        else:
            return None
        node = node.node


def _why_refused(inner: str) -> str:
    if not inner.strip():
        return "empty token"
    if inner[:1] in ("-", "+") or inner.endswith("-"):
        return "whitespace control ('{{-', '-}}') is not allowed"
    if len(inner) > _CLASSIFY_LIMIT:
        return "only dotted lookups are allowed"
    try:
        expr = _parse_expression(inner)
    except jinja2.TemplateSyntaxError as exc:
        return _jinja_reason(exc)
    except (RecursionError, ValueError, AssertionError):  # deeply nested or several outputs
        return "only dotted lookups are allowed"
    return _classify(expr, inner)


def _classify(expr: nodes.Node, inner: str) -> str:
    """Why a parsed expression is not a plain dotted path."""
    for node in _walk(expr):
        for node_type, reason in _REFUSED:
            if isinstance(node, node_type):
                return reason
        if isinstance(node, nodes.Getitem) and "[" in inner:
            return "subscripts with brackets are not allowed; write a dotted path such as a.0.b"
    if "[" in inner:
        return "subscripts with brackets are not allowed; write a dotted path such as a.0.b"
    return (
        "only dotted lookups are allowed "
        "(segments are ASCII names or list indexes, joined by '.' without spaces)"
    )


def _walk(expr: nodes.Node) -> list[nodes.Node]:
    """``expr`` and its descendants, outermost first, minus the index of ``a.0``."""
    found = [expr]
    for child in expr.iter_child_nodes():
        if isinstance(expr, nodes.Getitem) and child is expr.arg and _is_int_const(child):
            continue
        found.extend(_walk(child))
    return found


def _is_int_const(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and type(node.value) is int


def _jinja_reason(exc: jinja2.TemplateSyntaxError) -> str:
    return f"only dotted lookups are allowed (jinja2: {exc.message})"
