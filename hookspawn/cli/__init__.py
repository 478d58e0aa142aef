"""The `hookspawn` command line: `main` reads a command line (hookspawn.cli.parser) and runs
its verb's command (the modules beside it, one per group of verbs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. What goes wrong is one line on stderr and a non-zero exit, never a
    traceback; output cut short by its reader (`| head`) ends quietly."""
    # imported here: a module of this package (the client, a command) loads no other verb's
    from hookspawn.cli.help import check_options
    from hookspawn.cli.parser import Command, parse
    from hookspawn.errors import CommandError

    args, verb = parse(list(sys.argv[1:] if argv is None else argv))
    check_options(verb, args)
    func: Command = args.func
    try:
        code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except CommandError as exc:
        print(f"hookspawn {args.command}: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # the reader is gone: point stdout at /dev/null so the flush at exit cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # what a shell reports for a command ended by SIGPIPE
    except KeyboardInterrupt:
        print(f"hookspawn {args.command}: interrupted", file=sys.stderr)
        return 130
