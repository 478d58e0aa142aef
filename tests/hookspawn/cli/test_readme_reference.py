"""The command reference (docs/cli.md) lists exactly the parser's commands, actions and options."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hookspawn.cli.parser import build_parser

README = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def reference_block() -> list[str]:
    """The synopsis lines (`hookspawn …`) of the code block under `## Command line`."""
    section = README.read_text().split("\n## Command line\n", 1)[1]
    block = section.split("```\n", 2)[1]
    return [line for line in block.splitlines() if line.startswith("hookspawn ")]


def documented() -> dict[str, tuple[set[str], set[str]]]:
    """Subcommand → (options, words of its synopsis) as the README writes them."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for line in reference_block():
        name = line.split()[1]
        options, words = found.setdefault(name, (set(), set()))
        options.update(re.findall(r"(?<![\w-])(?:--[a-z][a-z-]*|-[A-Za-z](?![\w-]))", line))
        words.update(re.split(r"[\s|\[\]]+", line))
    return found


def parsed() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_command_is_documented_and_every_documented_command_exists() -> None:
    assert sorted(documented()) == sorted(parsed())


def test_every_option_of_every_command_is_documented_and_none_more() -> None:
    docs = documented()
    for name, parser in parsed().items():
        options = {
            option
            for action in parser._actions
            for option in action.option_strings
            if option not in ("-h", "--help")
        }
        assert docs[name][0] == options, name


def test_every_action_of_a_command_is_documented() -> None:
    docs = documented()
    for name, parser in parsed().items():
        for action in parser._actions:
            if not action.option_strings and action.choices:
                missing = {str(choice) for choice in action.choices} - docs[name][1]
                assert not missing, f"{name}: {sorted(missing)} not in the README"


def test_the_parse_reads_what_the_readme_holds() -> None:
    # the reference is found, and a line with a made-up option would be told apart
    assert len(reference_block()) >= len(parsed())
    assert re.findall(r"(?<![\w-])--[a-z][a-z-]*", "x [--no-event-schemas] a--b") == [
        "--no-event-schemas"
    ]
