"""Template fields (mount refs, trigger texts) compiled, errors at the YAML line of the token."""

from __future__ import annotations

from agents.errors import Loc
from agents.schema import Sink
from agents.source import YScalar
from templating import Dialect, Template, TemplateError, TemplateSyntaxError, compile_template

__all__ = ["compile_field"]


def compile_field(
    sink: Sink, node: YScalar, source: str, path: str, dialect: Dialect
) -> Template | None:
    try:
        return compile_template(source, dialect)
    except TemplateSyntaxError as exc:
        # Token lines count from the string's first line; a block scalar starts one line down.
        line = node.loc.line + (1 if node.block else 0) + max(exc.line - 1, 0)
        sink.error(
            Loc(node.loc.file, line),
            path,
            f"template error at {exc.token!r} (column {exc.column}): {exc.reason}",
        )
    except TemplateError as exc:
        sink.error(node.loc, path, f"template error: {exc.message}")
    return None
