"""Template tokens ``{{ a.b.0.c }}``: compile (checked at load) and render; safe git refs."""

from templating.errors import (
    Error,
    InvalidRefError,
    OutputTooLargeError,
    TemplateError,
    TemplateSyntaxError,
    UnresolvableTokenError,
)
from templating.refs import check_ref, is_safe_ref
from templating.template import MAX_TEXT_OUTPUT, Dialect, Template, Token, compile_template

__all__ = [
    "MAX_TEXT_OUTPUT",
    "Dialect",
    "Error",
    "InvalidRefError",
    "OutputTooLargeError",
    "Template",
    "TemplateError",
    "TemplateSyntaxError",
    "Token",
    "UnresolvableTokenError",
    "check_ref",
    "compile_template",
    "is_safe_ref",
]
