"""Each verb's help and options as a user meets them: defaults shown, an action's own help
(`connections sync --help`), and an option of another action refused.

A verb with actions (`deliveries list|show|…`) marks an option that only some of them take by
starting its help with their names: `"list: only this agent's sessions"`,
`"manifest, create: the App's name"`. An option with no such prefix is every action's.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["ActionHelp", "Formatter", "applies", "check_options"]

#: the positional a verb's actions are chosen by
ACTION = "action"


class Formatter(argparse.HelpFormatter):
    """Every option's default in its help, unless it is none or the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            default in (None, False, argparse.SUPPRESS)
            or "default" in text
            or not action.option_strings
        ):
            return action.help
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if action.dest == ACTION and action.choices:
            return [str(choice) for choice in action.choices]
    return []


def applies(action: argparse.Action, chosen: str, choices: Sequence[str]) -> bool:
    """Whether `action` (an option or positional) is one of `chosen`'s, by its help's prefix."""
    head, colon, _ = (action.help or "").partition(":")
    if not colon:
        return True
    named = [name.strip() for name in head.split(",")]
    if not all(name in choices for name in named):
        return True  # a colon in a help text that names no action
    return chosen in named


class ActionHelp(argparse.Action):
    """`-h/--help`: after an action (`connections sync --help`), that action's own help."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help="show this help")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        chosen = getattr(namespace, ACTION, None)
        choices = _choices(parser)
        if chosen not in choices:
            parser.print_help()
            parser.exit()
        own = argparse.ArgumentParser(
            prog=f"{parser.prog} {chosen}",
            description=parser.description,
            formatter_class=Formatter,
            add_help=False,
        )
        for action in parser._actions:
            if action.dest == ACTION or not applies(action, str(chosen), choices):
                continue
            group = own._optionals if action.option_strings else own._positionals
            group._add_action(action)
        own.print_help()
        parser.exit()


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse (exit 2) an option given that the chosen action does not take."""
    chosen = getattr(args, ACTION, None)
    choices = _choices(parser)
    if chosen not in choices:
        return
    for action in parser._actions:
        if not action.option_strings or applies(action, str(chosen), choices):
            continue
        if getattr(args, action.dest, action.default) != action.default:
            parser.error(
                f"{'/'.join(action.option_strings)} is not an option of `{chosen}` "
                f"({(action.help or '').partition(':')[0]} only)"
            )
