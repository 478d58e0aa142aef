"""Compiled templates: the dialects, the token record, compile_template and rendering."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from templating.dialect import Dialect
from templating.errors import OutputTooLargeError, UnresolvableTokenError
from templating.tokens import Token, scan

__all__ = ["MAX_TEXT_OUTPUT", "Dialect", "Template", "Token", "compile_template"]

MAX_TEXT_OUTPUT = 64 * 1024


@dataclass(frozen=True, eq=False)
class Template:
    """A compiled template; build it with :func:`compile_template`.

    It keeps the literal text between tokens, so rendering is a join of those
    chunks with each token's value: a value is inserted once and never read as a
    template again.
    """

    source: str
    dialect: Dialect
    tokens: tuple[Token, ...]
    _literals: tuple[str, ...] = field(repr=False)

    @property
    def event_dependent(self) -> bool:
        """True when the template has at least one token (it needs an event to render)."""
        return bool(self.tokens)

    def render(self, context: Mapping[str, Any]) -> str:
        """Render against ``context`` (JSON data: dicts, lists, strings, numbers, booleans).

        Raises :class:`UnresolvableTokenError` for a missing or non-scalar token and,
        for the text dialect, :class:`OutputTooLargeError` past ``MAX_TEXT_OUTPUT``.
        """
        literals = self._literals
        if not self.tokens:
            out = literals[0]
        else:
            parts = [literals[0]]
            for index, token in enumerate(self.tokens, 1):
                # Fast path for plain JSON (dict keys, list indexes); anything else, and
                # every error, goes through _lookup, which knows what to report.
                node: Any = context
                for segment in token.path:
                    if type(node) is dict and type(segment) is str and segment in node:  # noqa: SIM114
                        node = node[segment]
                    elif type(node) is list and type(segment) is int and segment < len(node):
                        node = node[segment]
                    else:
                        node = _lookup(context, token, self.dialect)
                        break
                parts.append(node if type(node) is str else _format(token, node))
                parts.append(literals[index])
            out = "".join(parts)
        if self.dialect is Dialect.TEXT and len(out) * 4 > MAX_TEXT_OUTPUT:
            size = len(out.encode("utf-8", "surrogatepass"))
            if size > MAX_TEXT_OUTPUT:
                raise OutputTooLargeError(size, MAX_TEXT_OUTPUT)
        return out


def compile_template(source: str, dialect: Dialect) -> Template:
    """Compile ``source`` for ``dialect``; raises :class:`TemplateSyntaxError`.

    See :mod:`templating.tokens` for the syntax (and what ``\\{{`` and a lone ``}}`` do).
    """
    dialect = Dialect(dialect)
    literals, tokens = scan(source, dialect)
    return Template(source, dialect, tokens, literals)


def _lookup(context: Mapping[str, Any], token: Token, dialect: Dialect) -> Any:
    """Follow ``token.path`` through JSON objects (keys) and arrays (indexes), never attributes."""
    root = "the session input" if dialect is Dialect.REF else "the payload"
    node: Any = context
    for depth, segment in enumerate(token.path):
        if isinstance(node, Mapping):
            key = segment if type(segment) is str else str(segment)
            if key in node:
                node = node[key]
                continue
        elif isinstance(node, list | tuple) and type(segment) is int and segment < len(node):
            node = node[segment]
            continue
        raise UnresolvableTokenError(
            token.text, str(segment), "missing", where=_where(token, depth, node, root)
        )
    return node


def _where(token: Token, depth: int, node: Any, root: str) -> str:
    if depth == 0:
        return root
    place = ".".join(str(s) for s in token.path[:depth])
    if isinstance(node, Mapping):
        return place
    if isinstance(node, list | tuple):
        return f"{place} (a list of {len(node)})"
    return f"{place} ({_kind(node)})"


def _format(token: Token, value: Any) -> str:
    if type(value) is str:
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # past Python's int-to-str digit limit
            raise OutputTooLargeError(value.bit_length() * 3 // 10, 4300) from None
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, str):
        return str.__str__(value)
    raise UnresolvableTokenError(token.text, str(token.path[-1]), "not_scalar", _kind(value))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
