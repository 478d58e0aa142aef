"""A tool's arguments as the GitHub MCP server names them: each read and checked by its type,
a wrong one refused naming it (`BadArguments`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.github_tool_arguments import branch_segments, whole_number
from workers.errors import WorkerError

Args = Mapping[str, Any]


class BadArguments(WorkerError):
    """A tool's arguments are not what it takes; names the argument."""

    code = "invalid_argument"


def required_str(args: Args, name: str, *, default: str | None = None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str) or not value:
        raise BadArguments(f"argument {name!r} must be a non-empty string", argument=name)
    return value


def optional_str(args: Args, name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadArguments(f"argument {name!r} must be a string", argument=name)
    return value


def required_int(args: Args, name: str) -> int:
    return whole_number(args.get(name), name)


def optional_int(args: Args, name: str) -> int | None:
    return None if args.get(name) is None else required_int(args, name)


def passed(args: Args, *names: str) -> dict[str, Any]:
    """The arguments passed through as they are (JSON-typed by the schema)."""
    return {name: args[name] for name in names if args.get(name) is not None}


def pages(args: Args) -> dict[str, Any]:
    return {"page": optional_int(args, "page"), "per_page": optional_int(args, "perPage")}


def flag(args: Args, name: str) -> bool:
    value = args.get(name)
    if value is not None and not isinstance(value, bool):
        raise BadArguments(f"argument {name!r} must be true or false", argument=name)
    return bool(value)


def strings(args: Args, name: str) -> list[str] | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise BadArguments(f"argument {name!r} must be an array of strings", argument=name)
    return list(value)


def not_taken(args: Args, *names: str) -> None:
    """Arguments of the GitHub MCP server's schema hookspawn does not execute: refused when
    given, never silently dropped."""
    for name in names:
        if args.get(name) not in (None, False, [], ""):
            raise BadArguments(
                f"argument {name!r} is not one hookspawn executes: leave it out", argument=name
            )


def only_fields(found: Any, args: Args) -> Any:
    """`fields`: each listed item cut to those keys (all of them when absent)."""
    wanted = strings(args, "fields")
    if not wanted or not isinstance(found, list):
        return found
    return [
        {k: v for k, v in item.items() if k in wanted} if isinstance(item, dict) else item
        for item in found
    ]


def method_arg(args: Args) -> str:
    return required_str(args, "method")


def ref_segment(args: Args, name: str) -> str:
    """A ref-like argument sent as one path segment (a sha, a tag, a branch): git's rules."""
    return "/".join(branch_segments(args.get(name), name))


def number_given(value: object) -> object:
    """A resource id as the GitHub MCP server takes it (a string of digits) or a number."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value
