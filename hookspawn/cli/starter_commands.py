"""`hookspawn schema [agent|fragment]`: the JSON Schema of an agent or fragment file as written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hookspawn.cli.client import CommandError
from hookspawn.cli.starter import schema_files
from hookspawn.schemas import schema_text

__all__ = ["schema"]


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
