"""Deployment settings: read from the environment once, at process start, then passed in."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated

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
    #: the base URL sessions reach this server at (the broker URL in a dispatched spec);
    #: unset: the server's own (`serve` fills it in from where it listens)
    public_url: str | None = None
    #: how long a session credential (the sandbox's key to the broker) stays valid
    session_credential_ttl: Duration = timedelta(hours=24)
    #: git `insteadOf` rewrites (`FROM=TO` prefixes): the broker accepts a git credential
    #: request for a mount's rewritten URL too
    git_url_rewrite: Csv = Field(default_factory=list)
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

    @property
    def github_app_configured(self) -> bool:
        return bool(self.github_app_id and self.github_private_key_path)

    @property
    def broker_base_url(self) -> str:
        """Where sessions reach the broker: HOOKSPAWN_PUBLIC_URL, else the local default."""
        return (self.public_url or "http://127.0.0.1:8000").rstrip("/")
