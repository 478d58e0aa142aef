"""Compiled templates: the dialects, the token record, compile_template and rendering."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TEXT_OUTPUT", "Dialect", "Template", "Token", "compile_template"]

MAX_TEXT_OUTPUT = 64 * 1024


class Dialect(enum.StrEnum):
    """Where a template is used, which decides what it renders against."""

    REF = "ref"
    TEXT = "text"


@dataclass(frozen=True)
class Token:
    """One ``{{ ... }}`` occurrence in a template source."""

    text: str
    path: tuple[str | int, ...]
    line: int
    column: int


@dataclass(frozen=True, eq=False)
class Template:
    """A compiled template; build it with :func:`compile_template`."""

    source: str
    dialect: Dialect
    tokens: tuple[Token, ...]

    @property
    def event_dependent(self) -> bool:
        return bool(self.tokens)

    def render(self, context: Mapping[str, Any]) -> str:
        raise NotImplementedError


def compile_template(source: str, dialect: Dialect) -> Template:
    raise NotImplementedError
