"""`hookspawn schema [agent|fragment]`: the JSON Schema of an agent or fragment file as written."""

from __future__ import annotations

import argparse
import sys

from hookspawn.schemas import schema_text

__all__ = ["schema"]


def schema(args: argparse.Namespace) -> int:
    """Print the schema (draft 2020-12) the shipped file holds, generated from the compiler."""
    sys.stdout.write(schema_text(args.kind))
    return 0
