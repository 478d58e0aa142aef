"""The front door's base error: the CLI's and the web app's errors derive from it."""

from __future__ import annotations

from templating.errors import Error

__all__ = ["HookspawnError"]


class HookspawnError(Error):
    """An error of the command line, `serve` or the web app; `code`, `message`, `details` as
    every package's base has them."""

    code = "hookspawn_error"
