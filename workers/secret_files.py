"""Secrets handed over as files: `HOOKSPAWN_WEBHOOK_SECRET_FILE`,
`HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE`, `HOOKSPAWN_ADMIN_TOKEN_FILE`,
`HOOKSPAWN_DISPATCH_SECRET_FILE`, `HOOKSPAWN_ANTHROPIC_API_KEY_FILE`,
`HOOKSPAWN_OPENAI_API_KEY_FILE`, `HOOKSPAWN_REDIS_PASSWORD_FILE` and
`HOOKSPAWN_REDIS_SENTINEL_PASSWORD_FILE` name a file whose contents are the setting (compose
secrets, Kubernetes secret volumes), so the secret itself never sits in the environment.

Each file is read once, when the settings are built; its trailing newline is not part of the
secret. A variable and its `_FILE` both set is an error naming both; a file that cannot be
read is an error naming its path.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource

from workers.errors import ConfigurationError

#: the settings that may come from a file, by field name
SECRET_FILE_FIELDS = (
    "webhook_secret",
    "github_app_webhook_secret",
    "admin_token",
    "dispatch_secret",
    "anthropic_api_key",
    "openai_api_key",
    "redis_password",
    "redis_sentinel_password",
)


class SecretFileError(ConfigurationError):
    """A `_FILE` setting that cannot be used: set beside its variable, or unreadable."""

    code = "secret_file_invalid"


def variable(field: str) -> str:
    return f"HOOKSPAWN_{field.upper()}"


def read_secret_file(path: str, name: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SecretFileError(f"{name}: cannot read {path}: {reason}") from None


def secret_file_values(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """Field name → the contents of its `_FILE`, for each one set (non-empty) in `environ`."""
    values: dict[str, str] = {}
    for field in SECRET_FILE_FIELDS:
        name = variable(field)
        path = environ.get(f"{name}_FILE", "")
        if not path:
            continue
        if environ.get(name, ""):
            raise SecretFileError(
                f"{name} and {name}_FILE are both set: set one (the _FILE names a file "
                "holding the secret)"
            )
        values[field] = read_secret_file(path, f"{name}_FILE")
    return values


class SecretFileSource(PydanticBaseSettingsSource):
    """The settings source of the `_FILE` variables (before the environment's own)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # everything is read at once in __call__

    def __call__(self) -> dict[str, Any]:
        return secret_file_values(os.environ)
