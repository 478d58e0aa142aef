"""The GitHub edge: App JWT calls and installation tokens through githubkit, answers classified.

Every failure leaves this module as a `workers.errors` class, classified and counted
by `workers.github.errors`. Installation tokens never appear in an exception, a log line or a repr.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx
import jwt
from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GitHubException

from triggers.timestamps import parse_iso
from workers.errors import ConfigurationError, GitHubUnavailable
from workers.github.errors import GitHubCall, classify, counted, unreadable
from workers.tls import tls_context

if TYPE_CHECKING:
    from githubkit.response import Response
    from githubkit_schemas.latest.types import (
        AppInstallationsInstallationIdAccessTokensPostBodyType,
    )

    from workers.settings import Settings

__all__ = [
    "GitHubApp",
    "HookDelivery",
    "MintedToken",
    "RemoteInstallation",
    "RemoteRepository",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

_PAGE_SIZE = 100


@dataclass(frozen=True)
class MintedToken:
    """An installation token; `token` stays out of the repr."""

    token: str = field(repr=False)
    expires_at: datetime
    permissions: dict[str, str]
    repository_ids: tuple[int, ...]


@dataclass(frozen=True)
class RemoteRepository:
    id: int
    full_name: str


@dataclass(frozen=True)
class RemoteInstallation:
    id: int
    account: str
    suspended: bool
    repository_selection: str


@dataclass(frozen=True)
class HookDelivery:
    """One attempt in the App's webhook delivery log (`GET /app/hook/deliveries`)."""

    id: int
    guid: str  # the X-GitHub-Delivery of the event (the same for its redeliveries)
    delivered_at: datetime
    status_code: int  # what the webhook endpoint answered; 0 when it could not be reached
    status: str
    event: str
    action: str | None = None
    redelivery: bool = False

    @property
    def succeeded(self) -> bool:
        return 200 <= self.status_code < 300


class GitHubApp:
    """One GitHub App against one API URL; sync, safe to share between threads."""

    def __init__(
        self, *, app_id: str, private_key: str, api_url: str, timeout: float = 10.0
    ) -> None:
        self.app_id = str(app_id)
        self.api_url = api_url
        _check_private_key(self.app_id, private_key)
        # A cache strategy of its own: githubkit's default one is process-wide and keys the
        # App JWT by app id only, so two clients (or two API URLs) would share JWTs.
        # auto_retry off: retries and backoff belong to the Celery task, not to a sleeping client.
        # Bodies go out as given (no schema validation), so a request is exactly what we built.
        self._github = GitHub(
            AppAuthStrategy(self.app_id, private_key),
            base_url=api_url,
            timeout=httpx.Timeout(timeout),
            cache_strategy=MemCacheStrategy(),
            http_cache=False,
            auto_retry=False,
            rest_api_validate_body=False,
            ssl_verify=tls_context(),
        )

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.app_id!r}, api_url={self.api_url!r})"

    @classmethod
    def from_settings(cls, settings: Settings) -> GitHubApp | None:
        """The configured App, or None when the deployment has no App credentials."""
        if not settings.github_app_id or settings.github_private_key_path is None:
            return None
        path = settings.github_private_key_path
        try:
            private_key = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the GitHub App private key at {path} "
                f"(HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH): {exc.strerror or exc}",
                path=str(path),
            ) from exc
        return cls(
            app_id=settings.github_app_id, private_key=private_key, api_url=settings.github_api_url
        )

    def mint_token(
        self, installation_id: int, repository_ids: Sequence[int], permissions: Mapping[str, str]
    ) -> MintedToken:
        """An installation token for exactly these repositories and permissions.

        An empty `repository_ids` asks for every repository of the installation.
        """
        if not permissions:
            raise ValueError("a token is always scoped: permissions must not be empty")
        repos = tuple(int(r) for r in repository_ids)
        body: dict[str, Any] = {}
        if repos:
            body["repository_ids"] = list(repos)
        body["permissions"] = dict(permissions)
        call = GitHubCall(
            what=f"minting a token for installation {installation_id}",
            installation_id=installation_id,
            repository_ids=repos,
            permissions=dict(permissions),
        )
        response = self._send(
            call,
            lambda: self._github.rest.apps.create_installation_access_token(
                installation_id,
                data=cast("AppInstallationsInstallationIdAccessTokensPostBodyType", body),
            ),
        )
        try:
            data = response.json()
            minted = MintedToken(
                token=str(data["token"]),
                expires_at=parse_iso(str(data["expires_at"])),
                permissions={
                    str(k): str(v) for k, v in dict(data.get("permissions") or {}).items()
                },
                repository_ids=tuple(int(r["id"]) for r in data.get("repositories") or ()) or repos,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise GitHubUnavailable(
                f"GitHub answered {call.what} with an unreadable token document "
                f"({type(exc).__name__})",
                installation_id=installation_id,
            ) from None
        log.info(
            "minted installation token: installation=%s repositories=%s permissions=%s expires=%s",
            installation_id,
            list(minted.repository_ids) or "all",
            minted.permissions,
            minted.expires_at.isoformat(),
        )
        return minted

    def revoke_token(self, token: str, installation_id: int | None = None) -> None:
        """Revoke an installation token at GitHub (`DELETE /installation/token`, authenticated
        by the token itself); GitHub refuses it from then on. A token GitHub already refuses
        (expired or revoked) raises GitHubUnavailable with `status` 401."""
        as_installation = self._github.with_auth(TokenAuthStrategy(token))
        call = GitHubCall(
            what="revoking an installation token",
            installation_id=installation_id,
            with_installation_token=True,
        )
        self._send(call, lambda: as_installation.rest.apps.revoke_installation_access_token())

    def list_installations(self) -> list[RemoteInstallation]:
        """Every installation of the App (App JWT, all pages)."""
        call = GitHubCall(what=f"listing the installations of GitHub App {self.app_id}")
        pages = self._github.rest.paginate(
            self._github.rest.apps.list_installations,
            map_func=lambda r: r.json(),
            per_page=_PAGE_SIZE,
        )
        found: list[RemoteInstallation] = []
        for item in self._iterate(call, pages):
            account = item.get("account") or {}
            found.append(
                RemoteInstallation(
                    id=int(item["id"]),
                    account=str(account.get("login") or account.get("slug") or ""),
                    suspended=item.get("suspended_at") is not None,
                    repository_selection=str(item.get("repository_selection", "")),
                )
            )
        return found

    def list_installation_repositories(self, installation_id: int) -> list[RemoteRepository]:
        """Every repository an installation covers (a `metadata: read` token, all pages)."""
        minted = self.mint_token(installation_id, (), {"metadata": "read"})
        as_installation = self._github.with_auth(TokenAuthStrategy(minted.token))
        call = GitHubCall(
            what=f"listing the repositories of installation {installation_id}",
            installation_id=installation_id,
            with_installation_token=True,
        )
        pages = as_installation.rest.paginate(
            as_installation.rest.apps.list_repos_accessible_to_installation,
            map_func=lambda r: list(r.json()["repositories"]),
            per_page=_PAGE_SIZE,
        )
        return [
            RemoteRepository(id=int(repo["id"]), full_name=str(repo["full_name"]))
            for repo in self._iterate(call, pages)
        ]

    def list_webhook_deliveries(self, since: datetime) -> list[HookDelivery]:
        """The App's webhook delivery log back to `since`, newest first (App JWT, cursor pages).

        Every attempt is a row (redeliveries too); pages are read until one reaches a delivery
        older than `since`.
        """
        call = GitHubCall(what=f"listing the webhook deliveries of GitHub App {self.app_id}")
        pages = self._github.rest.paginate(
            self._github.rest.apps.list_webhook_deliveries,
            map_func=lambda r: r.json(),
            per_page=_PAGE_SIZE,
        )
        found: list[HookDelivery] = []
        for item in self._iterate(call, pages):
            delivery = HookDelivery(
                id=int(item["id"]),
                guid=str(item["guid"]),
                delivered_at=parse_iso(str(item["delivered_at"])),
                status_code=int(item.get("status_code") or 0),
                status=str(item.get("status") or ""),
                event=str(item.get("event") or ""),
                action=str(item["action"]) if item.get("action") else None,
                redelivery=bool(item.get("redelivery")),
            )
            if delivery.delivered_at < since:
                break
            found.append(delivery)
        return found

    def redeliver(self, delivery_id: int) -> None:
        """Ask GitHub to deliver a webhook delivery (by its log id, not its guid) again."""
        call = GitHubCall(what=f"requesting redelivery of webhook delivery {delivery_id}")
        self._send(call, lambda: self._github.rest.apps.redeliver_webhook_delivery(delivery_id))
        log.info("requested redelivery of webhook delivery %s", delivery_id)

    def _send(self, call: GitHubCall, request: Callable[[], Response[Any, T]]) -> Response[Any, T]:
        started = time.monotonic()
        try:
            return request()
        except GitHubException as exc:
            raise counted(classify(exc, call, waited=time.monotonic() - started), exc) from exc
        except ValueError as exc:  # githubkit reads `retry-after` with int(); a date breaks it
            raise counted(unreadable(exc, call), exc) from exc

    def _iterate(self, call: GitHubCall, items: Iterator[T]) -> Iterator[T]:
        started = time.monotonic()
        try:
            yield from items
        except GitHubException as exc:
            raise counted(classify(exc, call, waited=time.monotonic() - started), exc) from exc
        except (ValueError, KeyError, TypeError) as exc:  # a page that is not what GitHub sends
            raise counted(unreadable(exc, call), exc) from exc


def _check_private_key(app_id: str, private_key: str) -> None:
    """Fail at start-up, not at the first spawn, when the key cannot sign an App JWT."""
    try:
        jwt.encode({"iss": app_id}, private_key, algorithm="RS256")
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise ConfigurationError(
            f"the GitHub App private key for app {app_id} cannot sign an RS256 JWT "
            f"({type(exc).__name__}); expected a PEM RSA private key",
            app_id=app_id,
        ) from None
