"""The Settings every verb reads: the environment's, with the GitHub App `github-app create`
kept in the data directory; a bad setting is one line naming the variable."""

from __future__ import annotations

from pydantic import ValidationError

from hookspawn.errors import CommandError
from workers.secret_files import SecretFileError
from workers.settings import Settings

__all__ = ["load_settings", "settings_message"]

#: the prefix pydantic puts before a validator's own message
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def load_settings() -> Settings:
    """The environment's settings, with the GitHub App `github-app create` kept in the data
    directory for what the environment leaves unset."""
    from workers.github.app_registration import with_registered_app

    try:
        return with_registered_app(Settings())
    except ValidationError as exc:
        first = exc.errors()[0]
        message = settings_message(first["msg"])
        if first["loc"]:  # not a check of several settings, whose message names them
            name = "HOOKSPAWN_" + "_".join(str(part) for part in first["loc"]).upper()
            message = f"{name}: {message}"
        raise CommandError(message, exit_code=2) from None
    except SecretFileError as exc:
        raise CommandError(exc.message, exit_code=2) from None


def settings_message(message: str) -> str:
    """A settings error's message as a person reads it: without pydantic's prefix."""
    for prefix in _PYDANTIC_PREFIXES:
        message = message.removeprefix(prefix)
    return message
