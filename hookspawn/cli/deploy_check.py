"""`hookspawn deploy check`: compose.yaml's environment checked before `docker compose up`, every
missing, invalid or inconsistent variable listed at once (exit 1 when there is one).

The environment is the one compose reads: the env file (`--env-file`, else `.env` beside
compose.yaml where there is one) under the process's environment (a variable set in both: the
process's, as compose has it). The profiles are `--profile`'s and COMPOSE_PROFILES'. What is
required comes from compose.yaml itself (each `${VAR:?…}`, each secret read from a variable or
a file) and from the rules compose cannot say: the webhook secret (the App's own wins where it
is set), the dispatch secret (only with a dispatch URL), the App's files, each profile's own.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import ValidationError

from hookspawn.cli.settings import settings_message
from hookspawn.errors import CommandError
from workers.secret_files import SECRET_FILE_FIELDS
from workers.settings import Settings

__all__ = ["Problem", "check_environment", "deploy", "read_env_file"]

#: `${VAR`, `${VAR:-…}`, `${VAR:?…}`, `$VAR` in compose.yaml; `$$` is a literal dollar
_READ = re.compile(r"(?<!\$)\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_REQUIRED = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*):?\?([^}]*)\}")
#: a secret read from a file a variable names: `${VAR:-/dev/null}` (no file: no such secret)
_FILE_VARIABLE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*):?-/dev/null\}$")
_ENV_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$")


class EnvFileError(CommandError):
    """An env file that cannot be read, or a line of it that is not `NAME=VALUE`."""


@dataclass(frozen=True)
class Problem:
    """One variable that stops the deployment from working as configured."""

    variable: str
    kind: str  # missing, invalid or inconsistent
    message: str

    def line(self) -> str:
        return f"{self.variable}: {self.kind}: {self.message}"


def read_env_file(path: Path) -> dict[str, str]:
    """An env file as compose reads it: `NAME=VALUE` lines (`export ` before is allowed),
    blank lines and `#` comments; a value in single quotes is literal, one in double quotes
    may escape `"` and `\\`, an unquoted one ends before ` #`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise EnvFileError(f"cannot read {path}: {reason}", exit_code=2) from None
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        found = _ENV_LINE.match(line)
        if found is None:
            raise EnvFileError(f"{path}:{number}: not NAME=VALUE: {raw!r}", exit_code=2)
        name, value = found.group(1), found.group(2)
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\([\"\\])", r"\1", value[1:-1])
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        values[name] = value
    return values


def _active(services: Mapping[str, Any], profiles: set[str]) -> dict[str, Any]:
    """The services `docker compose up` starts with these profiles."""
    return {
        name: spec
        for name, spec in services.items()
        if not spec.get("profiles") or "*" in profiles or profiles & set(spec["profiles"])
    }


def check_environment(
    compose_file: Path, env: Mapping[str, str], profiles: set[str], *, listed: Mapping[str, str]
) -> list[Problem]:
    """Every problem of `env` (what compose reads) for `compose_file` started with `profiles`;
    `listed` is the env file's own variables (one compose.yaml never reads is a problem)."""
    checker = _Checker(compose_file, env, profiles)
    checker.compose_requires()
    checker.webhook_secret()
    checker.dispatch_secret()
    checker.github_app()
    checker.runner()
    checker.monitoring()
    checker.tls()
    for problem in _invalid_settings(env):
        checker.add(problem.variable, problem.kind, problem.message)
    checker.unread(listed)
    return sorted(checker.problems.values(), key=lambda p: p.variable)


#: the variable naming the App's own webhook secret file on the host
APP_SECRET_FILE = "HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE"  # noqa: S105 - a variable's name


class _Checker:
    """The checks, each adding the problems it finds (the first one per variable kept)."""

    def __init__(self, compose_file: Path, env: Mapping[str, str], profiles: set[str]) -> None:
        self.text = compose_file.read_text(encoding="utf-8")
        document = yaml.safe_load(self.text)
        self.project = compose_file.parent
        self.services = _active(document.get("services") or {}, profiles)
        self.secrets: dict[str, Any] = document.get("secrets") or {}
        self.used = {name for spec in self.services.values() for name in spec.get("secrets") or []}
        self.env = env
        self.problems: dict[str, Problem] = {}

    def value(self, name: str) -> str:
        return self.env.get(name, "")

    def add(self, variable: str, kind: str, message: str) -> None:
        self.problems.setdefault(variable, Problem(variable, kind, message))

    def host_file(self, variable: str) -> Path | None:
        """The file `variable` names on the host (relative: to compose.yaml's directory)."""
        if not self.value(variable):
            return None
        path = Path(os.path.expanduser(self.value(variable)))
        path = path if path.is_absolute() else self.project / path
        if not path.is_file():
            self.add(variable, "invalid", f"no such file: {path}")
            return None
        return path

    def compose_requires(self) -> None:
        """Each `${VAR:?…}`, and each secret of a service started: its variable set (compose
        refuses to start without it, even empty), its file there."""
        for variable, why in _REQUIRED.findall(self.text):
            if not self.value(variable):
                self.add(variable, "missing", why.strip() or "compose.yaml requires it")
        for name in sorted(self.used):
            spec = self.secrets.get(name) or {}
            if "environment" in spec and spec["environment"] not in self.env:
                self.add(
                    spec["environment"],
                    "missing",
                    f"compose reads the secret {name!r} from it: set it, empty where unused "
                    "(docs/deploy-compose.md)",
                )
            found = _FILE_VARIABLE.match(str(spec.get("file", "")))
            if found:
                self.host_file(found.group(1))

    def webhook_secret(self) -> None:
        """The App's own secret wins where it is set; without it, the variable is needed."""
        webhook = self.value("HOOKSPAWN_WEBHOOK_SECRET")
        app_file = self.host_file(APP_SECRET_FILE)
        if app_file is not None:
            own = app_file.read_text(encoding="utf-8", errors="replace").strip()
            if not own:
                self.add(APP_SECRET_FILE, "invalid", f"{app_file} is empty")
            elif webhook and webhook.split(",")[0].strip() != own:
                self.add(
                    "HOOKSPAWN_WEBHOOK_SECRET",
                    "inconsistent",
                    f"the App's own secret ({APP_SECRET_FILE}) wins: this one would never be "
                    "used; leave it empty",
                )
        elif not webhook and not self.value(APP_SECRET_FILE):
            self.add(
                "HOOKSPAWN_WEBHOOK_SECRET",
                "missing",
                f"intake refuses every delivery without a webhook secret: set it, or "
                f"{APP_SECRET_FILE} to the `webhook-secret` file `github-app create` wrote",
            )

    def dispatch_secret(self) -> None:
        """Needed with a dispatch URL, and only then."""
        if self.value("HOOKSPAWN_DISPATCH_URL") and not self.value("HOOKSPAWN_DISPATCH_SECRET"):
            self.add(
                "HOOKSPAWN_DISPATCH_SECRET",
                "missing",
                "HOOKSPAWN_DISPATCH_URL is set: its POSTs would go unsigned",
            )

    def github_app(self) -> None:
        """The App's id with its key, its files with its id; the public URL a URL."""
        app_id = self.value("HOOKSPAWN_GITHUB_APP_ID")
        if app_id and not app_id.isdigit():
            self.add("HOOKSPAWN_GITHUB_APP_ID", "invalid", f"not a number: {app_id!r}")
        if app_id and not self.value("HOOKSPAWN_GITHUB_PRIVATE_KEY_FILE"):
            self.add(
                "HOOKSPAWN_GITHUB_PRIVATE_KEY_FILE",
                "missing",
                "HOOKSPAWN_GITHUB_APP_ID is set: the App's key (github-app.pem) signs its calls",
            )
        for variable in ("HOOKSPAWN_GITHUB_PRIVATE_KEY_FILE", APP_SECRET_FILE):
            if self.value(variable) and not app_id:
                self.add(
                    "HOOKSPAWN_GITHUB_APP_ID",
                    "missing",
                    f"{variable} is set: the App's id (the `id` in github-app.json) goes with it",
                )
        public = self.value("HOOKSPAWN_PUBLIC_URL")
        parts = urlsplit(public)
        if public and (parts.scheme not in ("http", "https") or not parts.hostname):
            self.add("HOOKSPAWN_PUBLIC_URL", "invalid", f"not an http(s) URL: {public!r}")

    def runner(self) -> None:
        """The runner profile with HOOKSPAWN_RUNNER=local and no dispatch URL (which would win),
        its sandbox a host file; `local` without the profile leaves sessions waiting."""
        if self.value("HOOKSPAWN_SANDBOX_CONFIG"):
            self.add(
                "HOOKSPAWN_SANDBOX_CONFIG",
                "inconsistent",
                "compose's runner reads the sandbox it mounts: name the host file in "
                "HOOKSPAWN_SANDBOX_HOST_CONFIG instead",
            )
        local = self.value("HOOKSPAWN_RUNNER") == "local"
        dispatch = bool(self.value("HOOKSPAWN_DISPATCH_URL"))
        if "runner" not in self.services:
            if local and not dispatch:
                self.add(
                    "HOOKSPAWN_RUNNER",
                    "inconsistent",
                    "`local` without the runner profile: sessions would wait for a runner; "
                    "start with --profile runner",
                )
            return
        self.host_file("HOOKSPAWN_SANDBOX_HOST_CONFIG")
        if not local:
            self.add(
                "HOOKSPAWN_RUNNER",
                "inconsistent",
                "the runner profile is on: set it to `local`, or web and worker never hand "
                "the runner a session",
            )
        elif dispatch:
            self.add(
                "HOOKSPAWN_DISPATCH_URL",
                "inconsistent",
                "sessions go to the dispatch URL whenever it is set: the runner would get none",
            )

    def monitoring(self) -> None:
        """Flower's basic auth and Grafana's password, where their profiles are on."""
        flower = "HOOKSPAWN_FLOWER_BASIC_AUTH"
        if "flower" in self.services and ":" not in self.value(flower):
            kind = "invalid" if self.value(flower) else "missing"
            self.add(flower, kind, "the flower profile: user:password")
        if "grafana" in self.services and not self.value("HOOKSPAWN_GRAFANA_ADMIN_PASSWORD"):
            self.add(
                "HOOKSPAWN_GRAFANA_ADMIN_PASSWORD",
                "missing",
                "the monitoring profile: Grafana's admin password",
            )

    def tls(self) -> None:
        """The tls profile: the proxy's domain is the public URL's host, web is published on
        loopback only, and the proxy's fixed address is in the edge network."""
        if "caddy" not in self.services:
            return
        domain = self.value("HOOKSPAWN_TLS_DOMAIN")
        public = self.value("HOOKSPAWN_PUBLIC_URL")
        parts = urlsplit(public)
        if not domain:
            self.add(
                "HOOKSPAWN_TLS_DOMAIN", "missing", "the tls profile: HOOKSPAWN_PUBLIC_URL's host"
            )
        elif parts.hostname and (parts.scheme, parts.hostname) != ("https", domain.lower()):
            self.add(
                "HOOKSPAWN_TLS_DOMAIN",
                "inconsistent",
                f"HOOKSPAWN_PUBLIC_URL should be https://{domain} (it is {public})",
            )
        publish = self.value("HOOKSPAWN_WEB_PUBLISH") or "8000"
        if not publish.startswith(("127.0.0.1:", "[::1]:")):
            self.add(
                "HOOKSPAWN_WEB_PUBLISH",
                "inconsistent",
                f"the tls profile: {publish!r} publishes web beside the proxy, unencrypted; "
                "set 127.0.0.1:8000",
            )
        address = self.value("HOOKSPAWN_EDGE_PROXY_ADDRESS") or "172.30.250.2"
        subnet = self.value("HOOKSPAWN_EDGE_SUBNET") or "172.30.250.0/24"
        try:
            inside = ipaddress.ip_address(address) in ipaddress.ip_network(subnet)
        except ValueError as exc:
            self.add("HOOKSPAWN_EDGE_SUBNET", "invalid", str(exc))
            return
        if not inside:
            self.add(
                "HOOKSPAWN_EDGE_PROXY_ADDRESS", "inconsistent", f"{address} is not in {subnet}"
            )

    def unread(self, listed: Mapping[str, str]) -> None:
        """A HOOKSPAWN_* variable of the env file that compose.yaml never reads."""
        read = set(_READ.findall(self.text)) | {
            str(spec["environment"]) for spec in self.secrets.values() if "environment" in spec
        }
        for name in sorted(listed):
            if name.startswith("HOOKSPAWN_") and name not in read:
                self.add(name, "inconsistent", "compose.yaml never reads it (a misspelt name?)")


def _invalid_settings(env: Mapping[str, str]) -> Iterator[Problem]:
    """Each HOOKSPAWN_* value given that the settings refuse (as web, worker and runner
    would at start), every one at once."""
    fields = {
        f"HOOKSPAWN_{name.upper()}": name
        for name in Settings.model_fields
        if name not in SECRET_FILE_FIELDS
    }
    given = {fields[name]: raw for name, raw in env.items() if name in fields and raw != ""}
    try:
        Settings.model_validate(given)  # the values alone: no environment, no `_FILE`
    except ValidationError as exc:
        for error in exc.errors():
            variable = "HOOKSPAWN_" + "_".join(str(part) for part in error["loc"][:1]).upper()
            yield Problem(variable, "invalid", settings_message(error["msg"]))


def deploy(args: argparse.Namespace) -> int:
    """`hookspawn deploy check`: one line per problem on stdout and exit 1, or one line
    saying the environment is complete and exit 0."""
    compose_file = Path(args.file)
    if not compose_file.is_file():
        raise CommandError(f"check: no compose file at {compose_file}", exit_code=2)
    env_file = Path(args.env_file) if args.env_file else compose_file.parent / ".env"
    listed = read_env_file(env_file) if args.env_file or env_file.is_file() else {}
    env = {**listed, **os.environ}
    profiles = {p for given in args.profile or [] for p in given.split(",") if p}
    profiles |= {p for p in env.get("COMPOSE_PROFILES", "").split(",") if p.strip()}
    problems = check_environment(compose_file, env, profiles, listed=listed)
    named = ", ".join(sorted(profiles)) or "none"
    source = f"{env_file} and the environment" if listed else "the environment"
    for problem in problems:
        print(problem.line())
    if problems:
        print(f"{len(problems)} to fix in {source} (profiles: {named})")
        return 1
    print(f"compose environment complete: {source} (profiles: {named})")
    return 0
