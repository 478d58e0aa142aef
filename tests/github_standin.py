"""A GitHub REST API stand-in on 127.0.0.1: App JWTs, installation tokens, installations, failures.

Real HTTP (a threaded `http.server`), so githubkit runs its whole stack against it. Installations
are set up from Python; every request is recorded; the next N answers of a route can be made to
fail the ways GitHub fails (401, suspended, 404, 422s, 5xx, slow, primary/secondary rate limits).

    with GitHubStandin(app_id="4242") as gh:
        gh.add_installation(7, "acme", repositories=[(101, "acme/api")])
        app = GitHubApp(app_id="4242", private_key=gh.private_key_pem, api_url=gh.url)
        gh.fail_next("access_tokens", "suspended")
"""

from __future__ import annotations

import functools
import json
import re
import secrets
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.github_standin_repos import StandinRepos

__all__ = [
    "FAILURE_KINDS",
    "ROUTES",
    "GitHubStandin",
    "RecordedRequest",
    "StandinInstallation",
    "key_pair",
    "other_private_key_pem",
]

DOCS = "https://docs.github.com/rest"
# GitHub's own wording (see workers/github/client.py for the classification that relies on it).
SUSPENDED_MESSAGE = "This installation has been suspended"
NOT_ACCESSIBLE_MESSAGE = (
    "There is at least one repository that does not exist or is not accessible "
    "to the parent installation."
)
NOT_GRANTED_MESSAGE = "The permissions requested are not granted to this installation."
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)
LEVELS = {"read": 1, "write": 2, "admin": 3}

ROUTES: dict[str, tuple[str, re.Pattern[str]]] = {
    "app": ("GET", re.compile(r"^/app$")),
    "installations": ("GET", re.compile(r"^/app/installations$")),
    "access_tokens": ("POST", re.compile(r"^/app/installations/(\d+)/access_tokens$")),
    "installation_repositories": ("GET", re.compile(r"^/installation/repositories$")),
    "revoke_token": ("DELETE", re.compile(r"^/installation/token$")),
    "hook_deliveries": ("GET", re.compile(r"^/app/hook/deliveries$")),
    "hook_delivery_attempts": ("POST", re.compile(r"^/app/hook/deliveries/(\d+)/attempts$")),
    "manifest_conversion": ("POST", re.compile(r"^/app-manifests/([^/]+)/conversions$")),
}

FAILURE_KINDS = (
    "unauthorized",  # 401, as for a bad JWT or token
    "suspended",  # 403 "This installation has been suspended"
    "not_found",  # 404
    "repository_inaccessible",  # 422 not accessible to the parent installation
    "permissions",  # 422 permissions not granted
    "server_error",  # 500 (or `status=` 502/503)
    "timeout",  # answer normally, but only after `delay` seconds
    "primary_rate_limit",  # 403 (or 429) + x-ratelimit-remaining: 0 + x-ratelimit-reset
    "secondary_rate_limit",  # 403 (or 429) + retry-after
    "secondary_rate_limit_message",  # 403 with the message only, no rate-limit headers
)


@functools.cache
def key_pair() -> tuple[str, str]:
    """The test App's RSA key pair as PEM (private, public); made once per process."""
    return _new_key_pair()


@functools.cache
def other_private_key_pem() -> str:
    """A well-formed private key GitHub has never seen (for 'wrong key' tests)."""
    return _new_key_pair()[0]


def _new_key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    route: str | None
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None


@dataclass
class StandinInstallation:
    id: int
    account: str
    repositories: dict[int, str]  # id → full_name
    permissions: dict[str, str]
    suspended: bool = False
    repository_selection: str = "selected"


@dataclass
class _IssuedToken:
    installation_id: int
    repository_ids: tuple[int, ...] | None  # None: every repository of the installation
    permissions: dict[str, str]
    expires_at: float


@dataclass
class _Failure:
    kind: str
    remaining: int
    status: int | None
    delay: float
    retry_after: int | str
    reset_in: int
    message: str | None
    after: int = 0


@dataclass
class _HookDelivery:
    id: int
    guid: str
    event: str
    action: str | None
    status_code: int
    installation_id: int | None
    repository_id: int | None
    delivered_at: str
    redelivery: bool = False


@dataclass
class _Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class GitHubStandin:
    """The stand-in server. Use as a context manager (or `start()` / `stop()`)."""

    def __init__(
        self,
        *,
        app_id: str = "4242",
        max_per_page: int = 100,
        token_ttl: float = 3600.0,
        private_key_pem: str | None = None,
        public_key_pem: str | None = None,
    ) -> None:
        self.app_id = str(app_id)
        self.max_per_page = max_per_page
        self.token_ttl = token_ttl
        if private_key_pem is None or public_key_pem is None:
            private_key_pem, public_key_pem = key_pair()
        self.private_key_pem = private_key_pem
        self.public_key_pem = public_key_pem
        self.requests: list[RecordedRequest] = []
        self.redelivered: list[int] = []
        #: tokens revoked through `DELETE /installation/token` (refused from then on)
        self.revoked: set[str] = set()
        self._installations: dict[int, StandinInstallation] = {}
        self._tokens: dict[str, _IssuedToken] = {}
        self._deliveries: list[_HookDelivery] = []
        self._failures: dict[str, list[_Failure]] = {}
        #: manifest-flow codes GitHub would hand the browser: code → the manifest posted
        self._manifest_codes: dict[str, dict[str, Any]] = {}
        #: the App the last conversion created (GitHub's answer, secrets included)
        self.converted: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        #: repository contents, issues and pull requests (tests/github_standin_repos.py)
        self.repos = StandinRepos(self.permissions_on)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> GitHubStandin:
        handler = type("Handler", (_Handler,), {"standin": self})
        server = _Server(("127.0.0.1", 0), handler)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> GitHubStandin:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the GitHub stand-in is not running (use it as a context manager)")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- state set up from tests --------------------------------------------------------------

    def add_installation(
        self,
        installation_id: int,
        account: str,
        *,
        repositories: Iterable[tuple[int, str]] | Mapping[int, str] = (),
        permissions: Mapping[str, str] | None = None,
        suspended: bool = False,
        repository_selection: str = "selected",
    ) -> StandinInstallation:
        """An installation; `permissions` default to every permission hookspawn can ask for."""
        repos = dict(repositories.items() if isinstance(repositories, Mapping) else repositories)
        granted = dict(
            permissions
            if permissions is not None
            else {
                "metadata": "read",
                "contents": "write",
                "pull_requests": "write",
                "issues": "write",
                "checks": "write",
                "actions": "write",
                "workflows": "write",
                "secrets": "write",
            }
        )
        granted.setdefault("metadata", "read")
        installation = StandinInstallation(
            id=installation_id,
            account=account,
            repositories=repos,
            permissions=granted,
            suspended=suspended,
            repository_selection=repository_selection,
        )
        with self._lock:
            self._installations[installation_id] = installation
        return installation

    def delete_installation(self, installation_id: int) -> None:
        with self._lock:
            self._installations.pop(installation_id, None)
            for token in [
                t for t, v in self._tokens.items() if v.installation_id == installation_id
            ]:
                del self._tokens[token]

    def suspend(self, installation_id: int, suspended: bool = True) -> None:
        with self._lock:
            self._installations[installation_id].suspended = suspended

    def remove_repository(self, installation_id: int, repository_id: int) -> None:
        with self._lock:
            self._installations[installation_id].repositories.pop(repository_id, None)

    def add_manifest_code(self, manifest: Mapping[str, Any]) -> str:
        """What GitHub does when the user creates the App from `manifest`: a one-time code
        the browser brings back to the App's redirect_url."""
        code = secrets.token_hex(10)
        with self._lock:
            self._manifest_codes[code] = dict(manifest)
        return code

    def add_hook_delivery(
        self,
        delivery_id: int,
        *,
        guid: str,
        event: str,
        action: str | None = None,
        status_code: int = 200,
        installation_id: int | None = None,
        repository_id: int | None = None,
        delivered_at: str = "2024-01-01T00:00:00Z",
    ) -> None:
        """A row of the App's webhook delivery log (`GET /app/hook/deliveries`), newest last."""
        with self._lock:
            self._deliveries.append(
                _HookDelivery(
                    delivery_id,
                    guid,
                    event,
                    action,
                    status_code,
                    installation_id,
                    repository_id,
                    delivered_at,
                )
            )

    def fail_next(
        self,
        route: str,
        kind: str | int,
        *,
        times: int = 1,
        status: int | None = None,
        delay: float = 5.0,
        retry_after: int | str = 30,
        reset_in: int = 120,
        message: str | None = None,
        after: int = 0,
    ) -> None:
        """Answer the next `times` requests of `route` (a key of ROUTES) the way `kind` says.

        `kind` is one of FAILURE_KINDS, or an HTTP status answered with `message`; `after`
        lets that many requests of the route through first (a failure on page 2, say).
        """
        if route not in ROUTES:
            raise ValueError(f"unknown route {route!r}; one of {sorted(ROUTES)}")
        if isinstance(kind, int):
            status, kind = kind, "status"
        elif kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {kind!r}; one of {FAILURE_KINDS}")
        failure = _Failure(kind, times, status, delay, retry_after, reset_in, message, after)
        with self._lock:
            self._failures.setdefault(route, []).append(failure)

    # -- what happened ------------------------------------------------------------------------

    def count(self, route: str | None = None) -> int:
        """How many requests arrived (for one route, or in all)."""
        with self._lock:
            return sum(1 for r in self.requests if route is None or r.route == route)

    def requests_to(self, route: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.route == route]

    def token_grant(self, token: str) -> tuple[int, tuple[int, ...] | None, dict[str, str]] | None:
        """(installation, repository ids or None for all, permissions) of a token it issued
        (revoked ones too)."""
        with self._lock:
            issued = self._tokens.get(token)
        if issued is None:
            return None
        return issued.installation_id, issued.repository_ids, dict(issued.permissions)

    def permissions_on(self, full_name: str, token: str) -> dict[str, str] | None:
        """What a token it issued may do on one repository (by name), as GitHub would decide
        it: None when the token is unknown, expired, revoked, or not for that repository."""
        with self._lock:
            issued = self._tokens.get(token)
            installation = self._installations.get(issued.installation_id) if issued else None
        if issued is None or installation is None or issued.expires_at <= time.time():
            return None
        if token in self.revoked:
            return None
        ids = [
            i for i, name in installation.repositories.items() if name.lower() == full_name.lower()
        ]
        if not ids or (issued.repository_ids is not None and ids[0] not in issued.repository_ids):
            return None
        return dict(issued.permissions)

    # -- request handling (server threads) -----------------------------------------------------

    def _handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Answer:
        split = urlsplit(target)
        path = split.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        route, args = _match(method, path)
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                bad_json = True
        with self._lock:
            self.requests.append(RecordedRequest(method, path, route, query, headers, body))
            failure = self._take_failure(route)
        if failure is not None:
            answer = self._failure_answer(failure)
            if answer is not None:
                return answer
        if route is None and not bad_json:
            answered = self.repos.handle(method, path, query, headers, body)
            if answered is not None:
                return _Answer(*answered)
        if route is None:
            return _error(404, "Not Found")
        if bad_json:
            return _error(400, "Problems parsing JSON")
        if path == "/app" or path.startswith("/app/"):
            refused = self._check_jwt(headers.get("authorization", ""))
            if refused is not None:
                return refused
        base = f"http://{headers.get('host', '127.0.0.1')}"
        with self._lock:
            return self._route(route, args, query, headers, body, base)

    def _take_failure(self, route: str | None) -> _Failure | None:
        queue = self._failures.get(route or "")
        if not queue:
            return None
        failure = queue[0]
        if failure.after > 0:
            failure.after -= 1
            return None
        failure.remaining -= 1
        if failure.remaining <= 0:
            queue.pop(0)
        return failure

    def _failure_answer(self, failure: _Failure) -> _Answer | None:
        kind = failure.kind
        if kind == "timeout":
            self._stopping.wait(failure.delay)
            return None  # then answer normally, too late for the client
        if kind == "primary_rate_limit":
            reset = int(time.time()) + failure.reset_in
            return _error(
                failure.status or 403,
                failure.message or "API rate limit exceeded for installation.",
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
            )
        if kind == "secondary_rate_limit":
            return _error(
                failure.status or 403,
                failure.message or SECONDARY_MESSAGE,
                {"retry-after": str(failure.retry_after)},
            )
        fixed = {
            "unauthorized": (401, "Bad credentials"),
            "suspended": (403, SUSPENDED_MESSAGE),
            "not_found": (404, "Not Found"),
            "repository_inaccessible": (422, NOT_ACCESSIBLE_MESSAGE),
            "permissions": (422, NOT_GRANTED_MESSAGE),
            "server_error": (500, "Server Error"),
            "secondary_rate_limit_message": (403, SECONDARY_MESSAGE),
            "status": (failure.status or 500, "Injected failure"),
        }
        status, message = fixed[kind]
        return _error(failure.status or status, failure.message or message)

    def _check_jwt(self, authorization: str) -> _Answer | None:
        scheme, _, credential = authorization.partition(" ")
        if scheme.lower() != "bearer" or not credential:
            return _error(401, "A JSON web token could not be decoded")
        try:
            claims = jwt.decode(
                credential,
                self.public_key_pem,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"], "verify_iss": False},
                leeway=60,
            )
        except jwt.PyJWTError as exc:
            return _error(401, f"A JSON web token could not be decoded ({type(exc).__name__})")
        if str(claims["iss"]) != self.app_id:
            return _error(401, f"'Issuer' claim ('iss') {claims['iss']!r} is not this app")
        if int(claims["exp"]) - int(claims["iat"]) > 600:
            return _error(401, "'Expiration time' claim ('exp') is too far in the future")
        return None

    def _installation_token(self, headers: Mapping[str, str]) -> _IssuedToken | _Answer:
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        issued = self._tokens.get(credential) if scheme.lower() in ("token", "bearer") else None
        if issued is None or issued.expires_at <= time.time() or credential in self.revoked:
            return _error(401, "Bad credentials")
        installation = self._installations.get(issued.installation_id)
        if installation is None:
            return _error(401, "Bad credentials")
        if installation.suspended:
            return _error(403, SUSPENDED_MESSAGE)
        return issued

    def _route(
        self,
        route: str,
        args: tuple[str, ...],
        query: dict[str, str],
        headers: Mapping[str, str],
        body: Any,
        base: str,
    ) -> _Answer:
        if route == "app":
            return _Answer(200, {"id": int(self.app_id), "slug": "hookspawn-test", "name": "test"})
        if route == "installations":
            items = [self._installation_json(i) for _, i in sorted(self._installations.items())]
            return _page(items, query, base, "/app/installations", self.max_per_page)
        if route == "access_tokens":
            return self._mint(int(args[0]), body)
        if route == "revoke_token":
            # https://docs.github.com/en/rest/apps/installations#revoke-an-installation-access-token
            issued = self._installation_token(headers)
            if isinstance(issued, _Answer):
                return issued
            self.revoked.add(headers["authorization"].partition(" ")[2])
            return _Answer(204, None)
        if route == "installation_repositories":
            issued = self._installation_token(headers)
            if isinstance(issued, _Answer):
                return issued
            installation = self._installations[issued.installation_id]
            ids = (
                sorted(installation.repositories)
                if issued.repository_ids is None
                else [r for r in issued.repository_ids if r in installation.repositories]
            )
            repos = [_repository_json(r, installation.repositories[r]) for r in ids]
            answer = _page(repos, query, base, "/installation/repositories", self.max_per_page)
            answer.body = {
                "total_count": len(repos),
                "repository_selection": installation.repository_selection,
                "repositories": answer.body,
            }
            return answer
        if route == "hook_deliveries":
            return self._hook_deliveries(query, base)
        if route == "manifest_conversion":
            return self._convert(args[0])
        # hook_delivery_attempts
        delivery_id = int(args[0])
        if not any(d.id == delivery_id for d in self._deliveries):
            return _error(404, "Not Found")
        self.redelivered.append(delivery_id)
        return _Answer(202, {})

    def _convert(self, code: str) -> _Answer:
        """`POST /app-manifests/{code}/conversions`: the App, with its key and secrets, once.
        https://docs.github.com/en/rest/apps/apps#create-a-github-app-from-a-manifest"""
        manifest = self._manifest_codes.pop(code, None)
        if manifest is None:
            return _error(404, "Not Found")
        slug = re.sub(r"[^a-z0-9-]+", "-", str(manifest.get("name") or "app").lower())
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        app = {
            "id": int(self.app_id),
            "slug": slug,
            "node_id": "MDM6QXBwNDI0Mg==",
            "owner": {"login": "octocat", "id": 1, "type": "User"},
            "name": manifest.get("name"),
            "description": manifest.get("description"),
            "external_url": manifest.get("url"),
            "html_url": f"https://github.com/apps/{slug}",
            "created_at": now,
            "updated_at": now,
            "permissions": dict(manifest.get("default_permissions") or {}),
            "events": list(manifest.get("default_events") or []),
            "client_id": "Iv1.8a61f9b3a7aba766",
            "client_secret": secrets.token_hex(20),
            "webhook_secret": secrets.token_hex(20),
            "pem": self.private_key_pem,
        }
        self.converted.append(app)
        return _Answer(201, app)

    def _mint(self, installation_id: int, body: Any) -> _Answer:
        installation = self._installations.get(installation_id)
        if installation is None:
            return _error(404, "Not Found")
        if installation.suspended:
            return _error(403, SUSPENDED_MESSAGE)
        body = body if isinstance(body, dict) else {}
        wanted_ids = body.get("repository_ids")
        repository_ids: tuple[int, ...] | None = None
        if wanted_ids is not None:
            if not isinstance(wanted_ids, list) or not all(isinstance(r, int) for r in wanted_ids):
                return _error(422, "Invalid request: repository_ids must be integers")
            if any(r not in installation.repositories for r in wanted_ids):
                return _error(422, NOT_ACCESSIBLE_MESSAGE)
            repository_ids = tuple(wanted_ids)
        wanted = body.get("permissions")
        if wanted is None:
            permissions = dict(installation.permissions)
        else:
            if not isinstance(wanted, dict):
                return _error(422, "Invalid request: permissions must be an object")
            for name, level in wanted.items():
                have = LEVELS.get(installation.permissions.get(name, ""), 0)
                if level not in LEVELS or LEVELS[level] > have:
                    return _error(422, NOT_GRANTED_MESSAGE)
            permissions = {str(k): str(v) for k, v in wanted.items()}
        token = "ghs_" + secrets.token_urlsafe(27)
        expires = time.time() + self.token_ttl
        self._tokens[token] = _IssuedToken(installation_id, repository_ids, permissions, expires)
        answer: dict[str, Any] = {
            "token": token,
            "expires_at": datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": permissions,
            "repository_selection": (
                "selected" if repository_ids is not None else installation.repository_selection
            ),
        }
        if repository_ids is not None:
            answer["repositories"] = [
                _repository_json(r, installation.repositories[r]) for r in repository_ids
            ]
        return _Answer(201, answer)

    def _installation_json(self, installation: StandinInstallation) -> dict[str, Any]:
        login = installation.account
        return {
            "id": installation.id,
            "account": {
                "login": login,
                "id": 1000 + installation.id,
                "node_id": f"MDQ6{login}",
                "type": "Organization",
                "site_admin": False,
            },
            "repository_selection": installation.repository_selection,
            "access_tokens_url": f"/app/installations/{installation.id}/access_tokens",
            "repositories_url": "/installation/repositories",
            "html_url": f"https://github.com/organizations/{login}/settings/installations/"
            f"{installation.id}",
            "app_id": int(self.app_id),
            "app_slug": "hookspawn-test",
            "target_id": 1000 + installation.id,
            "target_type": "Organization",
            "permissions": dict(installation.permissions),
            "events": ["pull_request", "issues", "push"],
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "single_file_name": None,
            "suspended_by": None,
            "suspended_at": "2024-06-01T00:00:00Z" if installation.suspended else None,
        }

    def _hook_deliveries(self, query: Mapping[str, str], base: str) -> _Answer:
        # Newest first, cursor-paginated like GitHub: the cursor is where the next page starts.
        rows = sorted(self._deliveries, key=lambda d: d.id, reverse=True)
        per_page = _per_page(query, self.max_per_page)
        start = int(query.get("cursor", "0") or 0)
        chunk = rows[start : start + per_page]
        items = [
            {
                "id": d.id,
                "guid": d.guid,
                "delivered_at": d.delivered_at,
                "redelivery": d.redelivery,
                "duration": 0.1,
                "status": "OK" if d.status_code < 400 else "Invalid HTTP Response",
                "status_code": d.status_code,
                "event": d.event,
                "action": d.action,
                "installation_id": d.installation_id,
                "repository_id": d.repository_id,
            }
            for d in chunk
        ]
        headers: dict[str, str] = {}
        if start + per_page < len(rows):
            following = urlencode({"per_page": per_page, "cursor": start + per_page})
            headers["link"] = f'<{base}/app/hook/deliveries?{following}>; rel="next"'
        return _Answer(200, items, headers)


def _match(method: str, path: str) -> tuple[str | None, tuple[str, ...]]:
    for name, (route_method, pattern) in ROUTES.items():
        found = pattern.match(path)
        if found and method == route_method:
            return name, found.groups()
    return None, ()


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> _Answer:
    return _Answer(status, {"message": message, "documentation_url": DOCS}, dict(headers or {}))


def _per_page(query: Mapping[str, str], cap: int) -> int:
    try:
        wanted = int(query.get("per_page", "30"))
    except ValueError:
        wanted = 30
    return max(1, min(wanted, 100, cap))


def _page(items: list[Any], query: Mapping[str, str], base: str, path: str, cap: int) -> _Answer:
    """One page of `items` with GitHub's `Link` header (first/prev/next/last)."""
    per_page = _per_page(query, cap)
    try:
        page = max(1, int(query.get("page", "1")))
    except ValueError:
        page = 1
    last = max(1, -(-len(items) // per_page))
    links = []

    def link(number: int, rel: str) -> str:
        return f'<{base}{path}?{urlencode({"per_page": per_page, "page": number})}>; rel="{rel}"'

    if page > 1:
        links += [link(page - 1, "prev"), link(1, "first")]
    if page < last:
        links += [link(page + 1, "next"), link(last, "last")]
    headers = {"link": ", ".join(links)} if links else {}
    return _Answer(200, items[(page - 1) * per_page : page * per_page], headers)


def _repository_json(repository_id: int, full_name: str) -> dict[str, Any]:
    owner, _, name = full_name.partition("/")
    return {
        "id": repository_id,
        "node_id": f"R_{repository_id}",
        "name": name,
        "full_name": full_name,
        "private": True,
        "owner": {"login": owner, "id": 1, "type": "Organization"},
        "html_url": f"https://github.com/{full_name}",
        "default_branch": "main",
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (timeout tests do) is not an error worth printing."""


class _Handler(BaseHTTPRequestHandler):
    standin: GitHubStandin
    protocol_version = "HTTP/1.1"
    server_version = "GitHubStandin/1"

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the stand-in's record is `GitHubStandin.requests`."""

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        answer = self.standin._handle(self.command, self.path, headers, raw)
        text = isinstance(answer.body, str)  # a diff (Accept: application/vnd.github.diff)
        payload = b"" if answer.status == 204 else json.dumps(answer.body).encode()
        if text:
            payload = answer.body.encode()
        try:
            self.send_response(answer.status, HTTPStatus(answer.status).phrase)
            if answer.status != 204:  # no content: neither a body nor its length
                kind = "text/plain" if text else "application/json"
                self.send_header("content-type", f"{kind}; charset=utf-8")
                self.send_header("content-length", str(len(payload)))
            self.send_header("x-github-request-id", secrets.token_hex(8).upper())
            if "x-ratelimit-remaining" not in answer.headers:
                # GitHub sends these on every answer; a refusal carrying them with budget left
                # is not a rate limit.
                self.send_header("x-ratelimit-limit", "5000")
                self.send_header("x-ratelimit-remaining", "4999")
                self.send_header("x-ratelimit-reset", str(int(time.time()) + 3600))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
