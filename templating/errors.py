"""The root of every error hookspawn raises on purpose, and the templating family below it."""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "Error",
    "InvalidRefError",
    "OutputTooLargeError",
    "TemplateError",
    "TemplateSyntaxError",
    "UnresolvableTokenError",
]


class Error(Exception):
    """What went wrong (`message`), as a stable `code` and `details`: each package's base.

    Templating is the bottom of the package arrows, so every package can derive from this
    one class; `code` is the class's unless given, `details` are the other keyword arguments.
    """

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details


class TemplateError(Error):
    """Base of every error raised by ``templating``; ``str(e) == e.message``."""

    code = "template_error"

    def __str__(self) -> str:
        return self.message

    def _init_args(self) -> tuple[Any, ...]:
        return (self.message,)

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle as cls(*args); ours take fields, not the message.
        return (type(self), self._init_args())


class TemplateSyntaxError(TemplateError):
    """A template that does not compile: the token as written, its position, and why."""

    code = "template_syntax"

    def __init__(self, token: str, line: int, column: int, reason: str) -> None:
        shown = token if len(token) <= 80 else token[:79] + "…"
        super().__init__(f"{line}:{column}: {shown}: {reason}")
        self.token = token
        self.line = line
        self.column = column
        self.reason = reason

    def _init_args(self) -> tuple[Any, ...]:
        return (self.token, self.line, self.column, self.reason)


class UnresolvableTokenError(TemplateError):
    """A token whose path is missing from the context, or names an object, a list or null."""

    code = "unresolvable_token"

    def __init__(
        self,
        token: str,
        segment: str,
        reason: Literal["missing", "not_scalar"],
        found: str | None = None,
        *,
        where: str = "",
    ) -> None:
        if reason == "missing":
            place = f" in {where}" if where else ""
            message = f"{token}: no {segment!r}{place}"
        else:
            message = f"{token}: {segment!r} is {_article(found or 'object')}, not a scalar"
        super().__init__(message)
        self.token = token
        self.segment = segment
        self.reason = reason
        self.found = found
        self.where = where

    def _init_args(self) -> tuple[Any, ...]:
        return (self.token, self.segment, self.reason, self.found)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_unresolvable, (*self._init_args(), self.where))


def _rebuild_unresolvable(
    token: str,
    segment: str,
    reason: Literal["missing", "not_scalar"],
    found: str | None,
    where: str,
) -> UnresolvableTokenError:
    return UnresolvableTokenError(token, segment, reason, found, where=where)


def _article(kind: str) -> str:
    if kind == "null":
        return kind
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


class OutputTooLargeError(TemplateError):
    """A rendered text template over the size limit (bytes of UTF-8)."""

    code = "output_too_large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"rendered text is {size} bytes, over the limit of {limit}")
        self.size = size
        self.limit = limit

    def _init_args(self) -> tuple[Any, ...]:
        return (self.size, self.limit)


class InvalidRefError(TemplateError):
    """A ref that is not a safe git ref name, with the rule it breaks."""

    code = "invalid_ref"

    def __init__(self, ref: str, reason: str) -> None:
        super().__init__(f"invalid ref {ref!r}: {reason}")
        self.ref = ref
        self.reason = reason

    def _init_args(self) -> tuple[Any, ...]:
        return (self.ref, self.reason)
