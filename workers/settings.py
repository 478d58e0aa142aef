"""Deployment settings: read from the environment once, at process start, then passed in."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `15m`, `2h`, `3d` (or a timedelta) → timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=float(value))
    text = str(value)
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 15m, 2h, 3d)")
    amount, unit = match.groups()
    seconds = int(amount) * _UNIT_SECONDS[unit]
    if seconds <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return timedelta(seconds=seconds)


def split_csv(value: object) -> list[str]:
    """A comma-separated environment value → its non-empty, trimmed items."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip() for part in str(value).split(",") if part.strip()]


Csv = Annotated[list[str], NoDecode, BeforeValidator(split_csv)]
Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


class Settings(BaseSettings):
    """Every `HOOKSPAWN_*` variable of SPEC §12."""

    model_config = SettingsConfigDict(env_prefix="HOOKSPAWN_", extra="ignore", frozen=True)

    redis_url: str | None = None
    webhook_secret: Csv = Field(default_factory=list)
    agents_dir: Path = Path(".auto")
    github_app_id: str | None = None
    github_private_key_path: Path | None = None
    github_api_url: str = "https://api.github.com"
    dispatch_url: str | None = None
    admin_token: str | None = None
    data_dir: Path = Path(".hookspawn")
    retention: Duration = timedelta(days=3)
    secret_names: Csv = Field(default_factory=list)
    #: how long a worker holds a delivery without renewing before it counts as lost
    lease_seconds: float = Field(default=30.0, gt=0, le=50)
    #: retries of one delivery (transient errors) before it is dead-lettered
    max_retries: int = Field(default=8, ge=0, le=50)
    #: the running server the client commands (send, deliveries, …) talk to, when no --url
    url: str | None = None
    #: `local`: created sessions are run on this machine by `hookspawn runner` (SPEC §15)
    runner: Annotated[Literal["local"] | None, BeforeValidator(lambda v: v or None)] = None
    #: `FROM=TO` address prefixes with git's `insteadOf` meaning, applied to every staging fetch
    git_url_rewrite: Csv = Field(default_factory=list)
    #: who setup and harness commands run as when the runner runs as root (`""`: as root)
    runner_user: str = "nobody"
    #: seconds one setup entry may take before the session fails with `setup_timeout`
    setup_timeout: float = Field(default=600.0, gt=0)
    #: the harness run after setup (shlex-split, no shell); unset: a session ends after setup
    harness_command: str | None = None
    #: a JSON object of secret name → value, the store `$secret` env references resolve from
    secrets_file: Path | None = None
    #: how long a runner holds a session without renewing before it counts as lost
    runner_lease_seconds: float = Field(default=30.0, gt=0, le=300)

    @property
    def github_app_configured(self) -> bool:
        return bool(self.github_app_id and self.github_private_key_path)
