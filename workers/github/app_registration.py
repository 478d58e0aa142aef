"""Registering the GitHub App through GitHub's manifest flow: the one-time `state` in Redis, the
code's conversion at GitHub, and the App's credentials kept in the data directory.

https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
The private key and the webhook secret go to files of mode 0600 only: never into Redis, a log
line or an exception.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from workers import keys
from workers.errors import GitHubUnavailable, WorkerError
from workers.settings import Settings

if TYPE_CHECKING:
    import redis

__all__ = [
    "APP_FILE",
    "KEY_FILE",
    "SECRET_FILE",
    "STATE_TTL_SECONDS",
    "InvalidState",
    "RegisteredApp",
    "convert_code",
    "data_dir_secret",
    "github_web_url",
    "issue_state",
    "save_app",
    "take_state",
    "webhook_secret_source",
    "with_registered_app",
]

#: in the data directory: the App's id and names (no secret), its private key, its webhook secret
APP_FILE = "github-app.json"
KEY_FILE = "github-app.pem"
SECRET_FILE = "webhook-secret"  # noqa: S105 - a file name; `serve` keeps its own secret there too
#: how long a registration may take between the form and GitHub's redirect back
STATE_TTL_SECONDS = 3600
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")


class InvalidState(WorkerError):
    """The callback's `state` is missing, unknown, expired or already used."""

    code = "invalid_state"


@dataclass(frozen=True)
class RegisteredApp:
    """What the callback page shows of the App GitHub created (no secret)."""

    id: int
    slug: str
    html_url: str
    owner: str
    key_path: Path

    @property
    def install_url(self) -> str:
        return f"{self.html_url.rstrip('/')}/installations/new"


def github_web_url(api_url: str) -> str:
    """GitHub's web address for an API base: api.github.com → github.com, `<host>/api/v3` (GitHub
    Enterprise Server) → `<host>`; any other base (a stand-in) serves both."""
    base = api_url.rstrip("/")
    if base == "https://api.github.com":
        return "https://github.com"
    if base.endswith("/api/v3"):
        return base[: -len("/api/v3")]
    return base


def issue_state(client: redis.Redis, *, org: str | None) -> str:
    """A fresh one-time state for one registration, kept STATE_TTL_SECONDS."""
    state = secrets.token_urlsafe(24)
    client.set(keys.github_app_state(state), json.dumps({"org": org}), ex=STATE_TTL_SECONDS)
    return state


def take_state(client: redis.Redis, state: str | None) -> dict[str, Any]:
    """The registration `state` was issued for, taken once; InvalidState otherwise."""
    if not state:
        raise InvalidState("the callback has no state: start again at /github-app/new")
    if len(state) > 200:
        raise InvalidState("the callback's state is not one this server issued")
    raw = cast(bytes | None, client.getdel(keys.github_app_state(state)))
    if raw is None:
        raise InvalidState(
            "the callback's state is unknown, expired or already used: start again at "
            "/github-app/new"
        )
    found: dict[str, Any] = json.loads(raw)
    return found


def convert_code(api_url: str, code: str | None, *, timeout: float = 15.0) -> dict[str, Any]:
    """GitHub's answer to `POST /app-manifests/{code}/conversions`: the App with its id, slug,
    pem, webhook_secret, client_id, client_secret and html_url."""
    if not code or not _CODE.match(code):
        raise WorkerError(
            "the callback's code is missing or malformed", code="invalid_request", where="code"
        )
    import httpx  # here: every command reads the App kept here (`with_registered_app`), few convert

    from workers.tls import tls_context

    url = f"{api_url.rstrip('/')}/app-manifests/{code}/conversions"
    try:
        answer = httpx.post(
            url,
            headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
            timeout=timeout,
            verify=tls_context(),
        )
    except httpx.HTTPError as exc:
        raise GitHubUnavailable(f"GitHub could not be reached for the conversion: {exc}") from None
    if answer.status_code >= 500:
        raise GitHubUnavailable(f"GitHub answered the conversion {answer.status_code}")
    if answer.status_code != 201:
        raise WorkerError(
            f"GitHub refused the App's code ({answer.status_code}): it is used once and "
            "expires after an hour; start again at /github-app/new",
            code="conversion_refused",
            status=answer.status_code,
        )
    try:
        app = answer.json()
    except ValueError:
        app = None
    if not (
        isinstance(app, dict)
        and isinstance(app.get("id"), int)
        and isinstance(app.get("pem"), str)
        and isinstance(app.get("webhook_secret"), str)
    ):
        raise GitHubUnavailable(
            "GitHub's conversion answer lacks the App's id, pem or webhook_secret"
        )
    return cast(dict[str, Any], app)


def data_dir_secret(data_dir: Path, *, create: bool) -> str | None:
    """The webhook secret kept in the data dir (the registered App's, or the one `serve`
    generated, mode 0600, on first use when `create`); None when there is none."""
    path = data_dir / SECRET_FILE
    if path.exists():
        return path.read_text().strip() or None
    if not create:
        return None
    data_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    return value


def _write_secret(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only (mode 0600, also when it existed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def save_app(data_dir: Path, app: dict[str, Any]) -> RegisteredApp:
    """Keep the converted App in `data_dir`: id and names, private key, webhook secret."""
    data_dir.mkdir(parents=True, exist_ok=True)
    key_path = (data_dir / KEY_FILE).absolute()
    _write_secret(key_path, str(app["pem"]))
    _write_secret(data_dir / SECRET_FILE, str(app["webhook_secret"]) + "\n")
    owner = app.get("owner")
    registered = RegisteredApp(
        id=int(app["id"]),
        slug=str(app.get("slug") or ""),
        html_url=str(app.get("html_url") or ""),
        owner=str(owner.get("login") or "") if isinstance(owner, dict) else "",
        key_path=key_path,
    )
    record = {
        "id": registered.id,
        "slug": registered.slug,
        "htmlUrl": registered.html_url,
        "owner": registered.owner,
        "clientId": app.get("client_id"),
    }
    (data_dir / APP_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return registered


def with_registered_app(settings: Settings) -> Settings:
    """`settings` with the GitHub App it runs as, and that App's own webhook secret as the one
    intake verifies with wherever the App has one: it wins over HOOKSPAWN_WEBHOOK_SECRET.

    The App's own secret is HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET (or its `_FILE`, compose's
    secret file) when set; else, with HOOKSPAWN_GITHUB_APP_ID unset, the App `github-app create`
    kept in the data directory gives its id, its key (unless HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH
    is set) and its webhook secret."""
    update: dict[str, Any] = {}
    if settings.github_app_id is None:
        registered = _registered_app(settings.data_dir)
        if registered is not None:
            app_id, secret = registered
            update["github_app_id"] = app_id
            if settings.github_private_key_path is None:
                update["github_private_key_path"] = (settings.data_dir / KEY_FILE).absolute()
            if secret and settings.github_app_webhook_secret is None:
                update["github_app_webhook_secret"] = secret
    own = update.get("github_app_webhook_secret", settings.github_app_webhook_secret)
    if own:
        update["webhook_secret"] = [own]
    return settings.model_copy(update=update) if update else settings


def _registered_app(data_dir: Path) -> tuple[str, str | None] | None:
    """The id and webhook secret of the App kept in `data_dir`; None when none is kept."""
    try:
        record = json.loads((data_dir / APP_FILE).read_text())
        app_id = str(int(record["id"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        secret = (data_dir / SECRET_FILE).read_text().strip()
    except OSError:
        secret = ""
    return app_id, secret or None


def webhook_secret_source(settings: Settings, environ: Mapping[str, str]) -> str:
    """Which webhook secret intake verifies with, in words, for the line `web` and `serve`
    write at start: `settings` as with_registered_app made them, `environ` the variables."""
    own = "HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET"
    if settings.github_app_webhook_secret:
        if environ.get(f"{own}_FILE"):
            where = f"{own}_FILE, {environ[f'{own}_FILE']}"
        elif environ.get(own):
            where = own
        else:
            where = f"kept in {settings.data_dir / SECRET_FILE}"
        text = f"the GitHub App's own ({where})"
        if _variable_secret(environ):
            text += "; HOOKSPAWN_WEBHOOK_SECRET is set too and not used"
        return text
    if not settings.webhook_secret:
        return "none (every delivery is refused)"
    path = environ.get("HOOKSPAWN_WEBHOOK_SECRET_FILE")
    return f"HOOKSPAWN_WEBHOOK_SECRET_FILE, {path}" if path else "HOOKSPAWN_WEBHOOK_SECRET"


def _variable_secret(environ: Mapping[str, str]) -> bool:
    """Whether HOOKSPAWN_WEBHOOK_SECRET holds a secret (itself, or a non-empty `_FILE`)."""
    if environ.get("HOOKSPAWN_WEBHOOK_SECRET"):
        return True
    path = environ.get("HOOKSPAWN_WEBHOOK_SECRET_FILE")
    try:
        return bool(path and Path(path).read_text().strip())
    except (OSError, UnicodeDecodeError):
        return False
