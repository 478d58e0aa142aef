"""Deployment settings: read from the environment once, at process start, then passed in."""

from __future__ import annotations

import ipaddress
import logging
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from agents.sandbox.domains import domain_problem
from workers.redis_target import RedisTarget, ReplicaAck, Sentinels
from workers.secret_files import SecretFileSource

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


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)i?b?\s*$", re.IGNORECASE)
_UNIT_BYTES = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(value: object) -> int:
    """`268435456`, `256M`, `256MB`, `256MiB`, `1G` (binary units) → bytes."""
    if isinstance(value, int):
        return value
    text = str(value)
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 65536, 64K, 256M, 1G)")
    amount, unit = match.groups()
    return int(amount) * _UNIT_BYTES[unit.lower()]


def split_csv(value: object) -> list[str]:
    """A comma-separated environment value → its non-empty, trimmed items."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip() for part in str(value).split(",") if part.strip()]


def proxy_addresses(value: list[str]) -> list[str]:
    """Each item an IP address or network (`10.0.0.0/8`), or `*` for any sender."""
    for item in value:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"not an IP address or network: {item!r}") from None
    return value


_HOST_ENTRY = re.compile(r"^(\*|[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(:\d+)?$")


def host_entries(value: list[str]) -> list[str]:
    """Each item a host name or address (a port is allowed and ignored), or `*`."""
    for item in value:
        if not _HOST_ENTRY.match(item):
            raise ValueError(f"not a host name (no scheme, no path): {item!r}")
    return value


_ADDRESS = re.compile(r"^([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$")


def host_port(item: str) -> tuple[str, int]:
    """`host:port` (`[::1]:26379` for an IPv6 address) → (host, port)."""
    match = _ADDRESS.match(item)
    port = int(match.group(2)) if match else 0
    if not match or not 0 < port < 65536:
        raise ValueError(f"not host:port: {item!r} (e.g. 10.0.0.5:26379)")
    return match.group(1).strip("[]"), port


def sentinel_addresses(value: list[str]) -> list[str]:
    """Each item a sentinel's `host:port`."""
    for item in value:
        host_port(item)
    return value


_MILLISECONDS = re.compile(r"^\s*(\d+)\s*(ms|s)\s*$")


def parse_milliseconds(value: object) -> int:
    """`50ms`, `2s` → milliseconds (the unit is required: a bare number is refused)."""
    if isinstance(value, int):
        return value
    text = str(value)
    match = _MILLISECONDS.match(text)
    if not match:
        raise ValueError(f"not a duration in ms or s: {text!r} (e.g. 50ms, 1s)")
    amount, unit = match.groups()
    return int(amount) * (1000 if unit == "s" else 1)


def srt_domains(value: list[str]) -> list[str]:
    """Each item a domain pattern for srt's `network.allowedDomains` (domain_problem)."""
    for item in value:
        problem = domain_problem(item)
        if problem is not None:
            raise ValueError(f"{item!r} is not a domain srt's proxy can allow: {problem}")
    return value


def level_name(value: object) -> str:
    """A `logging` level name (`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`; any case)."""
    text = str(value).strip().upper()
    if text not in logging.getLevelNamesMapping():
        raise ValueError(
            f"not a log level: {value!r} (use DEBUG, INFO, WARNING, ERROR or CRITICAL)"
        )
    return text


Csv = Annotated[list[str], NoDecode, BeforeValidator(split_csv)]
Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
Milliseconds = Annotated[int, BeforeValidator(parse_milliseconds)]
#: a path, or unset; an empty value is unset too (compose passes `${VAR:-}`)
OptionalPath = Annotated[Path | None, BeforeValidator(lambda v: v or None)]
#: a size, or unset; an empty value is unset too
OptionalSize = Annotated[
    int | None, BeforeValidator(lambda v: None if v in (None, "") else parse_size(v))
]
OptionalDuration = Annotated[
    timedelta | None, BeforeValidator(lambda v: None if v in (None, "") else parse_duration(v))
]


#: where `web` listens unless told otherwise, and the broker listener beside it
DEFAULT_WEB_PORT = 8000
DEFAULT_BROKER_PORT = DEFAULT_WEB_PORT + 1


class Settings(BaseSettings):
    """Every `HOOKSPAWN_*` variable (docs/configuration.md's settings table)."""

    model_config = SettingsConfigDict(env_prefix="HOOKSPAWN_", extra="ignore", frozen=True)

    redis_url: str | None = None
    #: the sentinels watching the Redis primary (`host:port`, comma-separated): with
    #: HOOKSPAWN_REDIS_SENTINEL_MASTER, every process finds the primary through them
    #: (instead of HOOKSPAWN_REDIS_URL) and follows a failover without a restart
    redis_sentinels: Annotated[Csv, AfterValidator(sentinel_addresses)] = Field(
        default_factory=list
    )
    #: the name the sentinels know the primary by (their `sentinel monitor NAME ...`)
    redis_sentinel_master: str | None = None
    #: the sentinels' own password (their `requirepass`), when they ask for one
    redis_sentinel_password: str | None = Field(default=None, repr=False)
    #: the password of the primary (and its replicas) found through the sentinels
    redis_password: str | None = Field(default=None, repr=False)
    #: replicas that must acknowledge a delivery's record (and each dispatch mark) before
    #: it counts as done (Redis WAIT); 0: the primary's answer is enough
    redis_min_replicas_ack: int = Field(default=0, ge=0, le=16)
    #: how long a write waits for those replicas before it is answered as not replicated
    redis_ack_timeout: Milliseconds = Field(default=50, ge=1, le=5000)
    webhook_secret: Csv = Field(default_factory=list)
    agents_dir: Path = Path(".auto")
    github_app_id: str | None = None
    github_private_key_path: OptionalPath = None
    #: the webhook secret of the GitHub App `github-app create` registered (the `webhook-secret`
    #: file it wrote); where set it wins over HOOKSPAWN_WEBHOOK_SECRET
    github_app_webhook_secret: Annotated[str | None, BeforeValidator(lambda v: v or None)] = Field(
        default=None, repr=False
    )
    #: the base URL sessions reach this server at (the broker URL in a dispatched spec);
    #: unset: the server's own (`serve` fills it in from where it listens)
    public_url: str | None = None
    #: the port of the broker listener `web` opens beside its own on the same host: the
    #: sessions' broker routes and nothing else; unset: web's --port + 1
    broker_port: int | None = Field(default=None, ge=0, le=65535)
    #: the base URL sessions reach the broker listener at (a spec's `broker.url` is
    #: `<it>/sessions/<id>`); unset: http://127.0.0.1:<broker port> (`serve` fills it in)
    broker_public_url: str | None = None
    #: host names (beside loopback, the bound host and the public URL's) this server answers
    #: requests for; any other `Host` is refused 421 (`*`: every host)
    allowed_hosts: Annotated[Csv, AfterValidator(host_entries)] = Field(default_factory=list)
    #: how long a session credential (the sandbox's key to the broker) stays valid
    session_credential_ttl: Duration = timedelta(hours=24)
    #: `FROM=TO` address prefixes with git's `insteadOf` meaning: applied to every staging
    #: fetch, and the broker accepts a git credential request for a mount's rewritten URL too
    git_url_rewrite: Csv = Field(default_factory=list)
    #: what the GitHub tool gate grants on a covered repository no mount of the session
    #: names: `default` (the default capabilities, merge and secrets denied), `read` (each
    #: capability at most read) or `none` (no tool)
    unmounted_capabilities: Annotated[
        Literal["default", "read", "none"],
        BeforeValidator(lambda v: str(v).strip().lower() if v not in (None, "") else "default"),
    ] = "default"
    github_api_url: str = "https://api.github.com"
    dispatch_url: str | None = None
    #: key of the HMAC-SHA256 signature on every dispatch POST (X-Hookspawn-Signature-256)
    dispatch_secret: str | None = None
    admin_token: str | None = None
    #: the level of the log lines `serve`, `web`, `worker` and `runner` write to stderr
    log_level: Annotated[str, BeforeValidator(level_name)] = "INFO"
    data_dir: Path = Path(".hookspawn")
    retention: Duration = timedelta(days=3)
    #: how long session records (and their index entries) are kept; unset: as deliveries
    session_retention: OptionalDuration = None
    secret_names: Csv = Field(default_factory=list)
    #: how long a worker holds a delivery without renewing before it counts as lost
    lease_seconds: float = Field(default=30.0, gt=0, le=50)
    #: retries of one delivery (transient errors) before it is dead-lettered
    max_retries: int = Field(default=8, ge=0, le=50)
    #: seconds the first retry of a delivery waits at least; later ones up to twice as long
    retry_backoff_floor: float = Field(default=1.0, gt=0, le=60)
    #: the running server the client commands (send, deliveries, …) talk to, when no --url
    url: str | None = None
    # HTTP limits, per connection and before any authentication (hookspawn/web/server/limits.py)
    #: from connecting (or the first byte of the next request) to the end of its headers
    header_timeout: Duration = timedelta(seconds=10)
    #: from the end of the headers to the end of the body
    body_timeout: Duration = timedelta(seconds=30)
    #: request line and headers together; past it, 431
    max_header_bytes: Size = Field(default=32 * 1024, ge=1024, le=1024 * 1024)
    #: connections open at once; past it a new one is answered 503 and closed
    max_connections: int = Field(default=1000, ge=1, le=100_000)
    #: request body bytes held by all requests at once; past it, 503 with Retry-After
    body_budget: Size = Field(default=256 * 1024 * 1024, ge=1024 * 1024)
    #: addresses or networks of proxies whose X-Forwarded-Proto / -For are believed
    trusted_proxies: Annotated[Csv, AfterValidator(proxy_addresses)] = Field(default_factory=list)
    #: the sandbox configuration session commands are confined by
    sandbox_config: OptionalPath = None
    #: domain patterns confined commands may reach through srt's proxy (`example.com`,
    #: `*.example.com`, `127.0.0.1:8000`, …); empty: no network
    sandbox_allowed_domains: Annotated[Csv, AfterValidator(srt_domains)] = Field(
        default_factory=list
    )
    #: `local`: created sessions are run on this machine by `hookspawn runner`
    runner: Annotated[Literal["local"] | None, BeforeValidator(lambda v: v or None)] = None
    #: who setup and harness commands run as when the runner runs as root (`""`: as root)
    runner_user: str = "nobody"
    #: seconds one setup entry may take before the session fails with `setup_timeout`
    setup_timeout: float = Field(default=600.0, gt=0)
    #: a custom harness run after setup for every agent (a shell command line); unset: the
    #: harness the agent names (claude-code, codex)
    harness_command: str | None = None
    #: how long the harness may run before its process group is killed (`harness_timeout`)
    harness_timeout: Duration = timedelta(hours=2)
    #: Claude Code's model key and endpoint (harness claude-code); the key reaches the
    #: harness's environment only
    anthropic_api_key: str | None = Field(default=None, repr=False)
    anthropic_base_url: str = "https://api.anthropic.com"
    #: Codex's model key and endpoint (harness codex; the OpenAI Responses API)
    openai_api_key: str | None = Field(default=None, repr=False)
    openai_base_url: str = "https://api.openai.com/v1"
    #: the model each harness asks for; unset: the harness's own default
    claude_model: str | None = None
    codex_model: str | None = None
    #: what a session does when its harness's model key is unset: `fail`
    #: (`harness_unavailable`) or `skip` (end after setup, `harness.skipped` saying why; the demo's)
    harness_without_key: Literal["fail", "skip"] = "fail"
    #: the most a session's log file holds, hookspawn's own lines included; output past it
    #: is dropped, and one line says how much
    session_log_limit: Size = Field(default=10 * 1024 * 1024, ge=16 * 1024)
    #: where the runner puts session roots; unset: `<data dir>/workspaces`, or when the
    #: runner user cannot enter the data directory, a directory of the runner's own for it
    workspaces_dir: OptionalPath = None
    #: a JSON object of secret name → value, the store `$secret` env references resolve from
    secrets_file: OptionalPath = None
    #: how long a runner holds a session without renewing before it counts as lost
    runner_lease_seconds: float = Field(default=30.0, gt=0, le=300)
    #: on SIGTERM, how long the runner lets running sessions go on before it stops them
    #: (each then fails `runner_stopped`)
    runner_stop_grace: Duration = timedelta(seconds=30)
    #: tasks (processes and threads) one session's setup and harness may have at once (srt
    #: alone takes about twenty)
    session_max_processes: int = Field(default=512, ge=32)
    #: bytes one session root may hold (a sparse file at its length, a file linked several
    #: times once) while setup and the harness run and when its snapshot is saved
    session_disk_limit: Size = Field(default=10 * 1024**3, ge=1024 * 1024)
    #: bytes a setup snapshot may hold, counted alike; a larger one is not saved. Unset: the
    #: session disk limit
    snapshot_limit: OptionalSize = Field(default=None, ge=1024 * 1024)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The `_FILE` variables of the secrets (workers/secret_files.py) beside the rest."""
        files = SecretFileSource(settings_cls)
        return init_settings, files, env_settings, dotenv_settings, file_secret_settings

    @model_validator(mode="after")
    def _one_redis(self) -> Settings:
        """Sentinels with their master name, or a URL: never both, never half of one."""
        if self.redis_sentinels and not self.redis_sentinel_master:
            raise ValueError(
                "HOOKSPAWN_REDIS_SENTINELS is set without HOOKSPAWN_REDIS_SENTINEL_MASTER "
                "(the name the sentinels know the primary by)"
            )
        if self.redis_sentinel_master and not self.redis_sentinels:
            raise ValueError(
                "HOOKSPAWN_REDIS_SENTINEL_MASTER is set without HOOKSPAWN_REDIS_SENTINELS "
                "(the sentinels' host:port, comma-separated)"
            )
        if self.redis_sentinels and self.redis_url:
            raise ValueError(
                "HOOKSPAWN_REDIS_URL and HOOKSPAWN_REDIS_SENTINELS are both set: set one (with "
                "sentinels, the primary is found through them)"
            )
        for name, value in (
            ("HOOKSPAWN_REDIS_PASSWORD", self.redis_password),
            ("HOOKSPAWN_REDIS_SENTINEL_PASSWORD", self.redis_sentinel_password),
        ):
            if value and not self.redis_sentinels:
                raise ValueError(
                    f"{name} is only used with HOOKSPAWN_REDIS_SENTINELS (a password for "
                    "HOOKSPAWN_REDIS_URL goes in the URL: redis://:PASSWORD@host:6379/0)"
                )
        return self

    @property
    def redis_target(self) -> RedisTarget | None:
        """Where the store is: the primary through its sentinels, HOOKSPAWN_REDIS_URL, or
        None (neither is set)."""
        if self.redis_sentinels and self.redis_sentinel_master:
            return Sentinels(
                tuple(host_port(item) for item in self.redis_sentinels),
                self.redis_sentinel_master,
                sentinel_password=self.redis_sentinel_password or None,
                password=self.redis_password or None,
            )
        return self.redis_url or None

    @property
    def replica_ack(self) -> ReplicaAck:
        """HOOKSPAWN_REDIS_MIN_REPLICAS_ACK within HOOKSPAWN_REDIS_ACK_TIMEOUT."""
        return ReplicaAck(self.redis_min_replicas_ack, self.redis_ack_timeout)

    @property
    def sessions_kept(self) -> timedelta:
        """HOOKSPAWN_SESSION_RETENTION, or HOOKSPAWN_RETENTION when that is not set."""
        return self.session_retention or self.retention

    @property
    def snapshot_bytes(self) -> int:
        """HOOKSPAWN_SNAPSHOT_LIMIT, or HOOKSPAWN_SESSION_DISK_LIMIT when that is not set."""
        return self.session_disk_limit if self.snapshot_limit is None else self.snapshot_limit

    @property
    def broker_base_url(self) -> str:
        """Where sessions reach the broker listener: HOOKSPAWN_BROKER_PUBLIC_URL, else its port
        on loopback (HOOKSPAWN_BROKER_PORT, else the default web port's next). Never the admin
        API's address: a sandbox may reach this one."""
        port = self.broker_port or DEFAULT_BROKER_PORT
        return (self.broker_public_url or f"http://127.0.0.1:{port}").rstrip("/")
