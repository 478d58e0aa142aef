"""The front door's errors: `HookspawnError`, the base the CLI's and the web app's errors derive
from, and `CommandError`, what a command (or a check before a server starts) says as one line."""

from __future__ import annotations

from templating.errors import Error

__all__ = ["CommandError", "HookspawnError"]


class HookspawnError(Error):
    """An error of the command line, `serve` or the web app; `code`, `message`, `details` as
    every package's base has them."""

    code = "hookspawn_error"


class CommandError(HookspawnError):
    """What a command prints as its one line on stderr before it exits with `exit_code`."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
