"""The verbs that write agent files' scaffolding: `hookspawn init DIR` (a starter .auto
directory) and `hookspawn schema [agent|fragment]` (the JSON Schema of a file as written)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hookspawn.cli.starter import AlreadyThere, schema_files, write_starter
from hookspawn.errors import CommandError
from hookspawn.schemas import schema_text

__all__ = ["init", "schema"]


def schema(args: argparse.Namespace) -> int:
    """Print the schema (draft 2020-12) the shipped file holds, generated from the compiler;
    with `--write DIR`, refresh both schemas in the `.auto` tree DIR instead."""
    if args.write is None:
        sys.stdout.write(schema_text(args.kind))
        return 0
    directory = Path(args.write)
    if not directory.is_dir():
        raise CommandError(f"{directory}: not a directory (give the .auto directory)", exit_code=2)
    for path, text in schema_files(directory).items():
        try:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
        print(f"wrote {path}")
    return 0


def init(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    try:
        written = write_starter(directory, repository=args.repository)
    except AlreadyThere as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    for path in written:
        print(f"wrote {path}")
    print(f"check them with `hookspawn check --strict {directory}`", end="")
    if args.repository == "your-org/your-repo":
        print("; then put your repository in place of your-org/your-repo", end="")
    print()
    return 0
