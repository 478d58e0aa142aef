"""How a failed GitHub call becomes a `workers.errors` class, counted by its kind.

Definitive refusals become `AccessRevoked` / `TokenPermissionNotGranted`, transient trouble
`GitHubUnavailable` (with `retry_after` when GitHub says how long), bad App credentials or a
call githubkit refuses `ConfigurationError`. Each failure is counted in
`hookspawn_github_errors_total`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from githubkit.exception import (
    GitHubException,
    PrimaryRateLimitExceeded,
    RateLimitExceeded,
    RequestError,
    RequestFailed,
    RequestTimeout,
)

from workers import metrics
from workers.errors import (
    AccessRevoked,
    ConfigurationError,
    GitHubUnavailable,
    TokenPermissionNotGranted,
    WorkerError,
)

__all__ = ["GitHubCall", "classify", "counted", "unreadable"]

# GitHub's own wording for the definitive mint refusals.
# https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app
_SUSPENDED = "suspended"  # "This installation has been suspended"
_NOT_ACCESSIBLE = "not accessible to the parent installation"
_PERMISSIONS = "permission"  # "The permissions requested are not granted to this installation."
# Without a usable header GitHub asks for at least a minute before retrying a rate-limited call.
# https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api
_DEFAULT_RATE_LIMIT_WAIT = 60.0


@dataclass(frozen=True)
class GitHubCall:
    """What a request was for, so a failure can say so and be classified."""

    what: str
    installation_id: int | None = None
    repository_ids: tuple[int, ...] = ()
    permissions: Mapping[str, str] | None = None
    with_installation_token: bool = False


def counted(error: WorkerError, cause: Exception) -> WorkerError:
    """Count the failure in `hookspawn_github_errors_total` by its class; return it."""
    metrics.inc(metrics.GITHUB_ERRORS, _error_class(error, cause))
    return error


def _error_class(error: WorkerError, cause: Exception) -> str:
    if isinstance(error, AccessRevoked):
        return error.kind
    if isinstance(error, TokenPermissionNotGranted):
        return "permission_not_granted"
    if isinstance(cause, RateLimitExceeded) or (
        isinstance(error, GitHubUnavailable) and error.retry_after is not None
    ):
        return "rate_limited"
    if isinstance(cause, RequestFailed):  # GitHub answered, with an error status
        status = error.details.get("status")
        if isinstance(status, int) and status >= 500:
            return "server_error"
        return "unauthorized" if status == 401 else "client_error"
    if isinstance(cause, RequestTimeout):
        return "timeout"
    if isinstance(cause, RequestError):
        return "unreachable" if isinstance(error, GitHubUnavailable) else "request_error"
    return "unreadable"


def unreadable(exc: Exception, call: GitHubCall) -> GitHubUnavailable:
    return GitHubUnavailable(
        f"GitHub's answer could not be read while {call.what}: {type(exc).__name__}: {exc}"
    )


def classify(exc: GitHubException, call: GitHubCall, *, waited: float) -> WorkerError:
    """One githubkit failure → the worker error it stands for."""
    if isinstance(exc, RateLimitExceeded):
        kind = "primary" if isinstance(exc, PrimaryRateLimitExceeded) else "secondary"
        retry_after = max(exc.retry_after.total_seconds(), 0.0)
        return GitHubUnavailable(
            f"GitHub {kind} rate limit exceeded while {call.what} "
            f"(HTTP {exc.response.status_code}); retry after {retry_after:.0f}s",
            retry_after=retry_after,
            status=exc.response.status_code,
            rate_limit=kind,
        )
    if isinstance(exc, RequestFailed):
        return _classify_answer(exc.response.raw_response, call)
    if isinstance(exc, RequestTimeout):
        return GitHubUnavailable(
            f"GitHub did not answer within the timeout while {call.what} "
            f"(gave up after {waited:.1f}s)"
        )
    if isinstance(exc, RequestError):
        inner = exc.exc
        if isinstance(inner, httpx.TransportError):
            return GitHubUnavailable(
                f"could not reach GitHub while {call.what}: {type(inner).__name__}: {inner}"
            )
        return ConfigurationError(
            f"the request to GitHub could not be made while {call.what}: {type(inner).__name__}"
        )
    return ConfigurationError(f"githubkit refused the call while {call.what}: {type(exc).__name__}")


def _classify_answer(response: httpx.Response, call: GitHubCall) -> WorkerError:
    status = response.status_code
    message, errors = _error_text(response)
    said = f"GitHub answered {status} while {call.what}: {message or '(no message)'}"
    lowered = message.lower()
    if status == 401 and call.with_installation_token:
        # The token died under us (revoked, installation gone): the next try mints afresh and
        # gets GitHub's definitive answer from the mint endpoint.
        return GitHubUnavailable(f"{said}; the installation token was refused", status=status)
    if status == 401:
        return ConfigurationError(
            f"{said}; the App credentials were refused "
            "(check HOOKSPAWN_GITHUB_APP_ID and the private key)",
            status=status,
        )
    if status == 429 or (status == 403 and "rate limit" in lowered):
        # A rate limit githubkit did not recognise (no headers it knows): wait GitHub's minimum.
        return GitHubUnavailable(said, retry_after=_retry_after(response), status=status)
    if status >= 500:
        return GitHubUnavailable(said, status=status)
    if call.installation_id is not None:
        refusal = _refusal(status, lowered, said, errors, call, call.installation_id)
        if refusal is not None:
            return refusal
    return ConfigurationError(said, status=status)


def _refusal(
    status: int, lowered: str, said: str, errors: list[str], call: GitHubCall, installation_id: int
) -> WorkerError | None:
    if status == 404:
        return AccessRevoked(said, kind="installation_deleted", installation_id=installation_id)
    if status == 403 and _SUSPENDED in lowered:
        return AccessRevoked(said, kind="installation_suspended", installation_id=installation_id)
    if status == 422 and _NOT_ACCESSIBLE in lowered:
        return AccessRevoked(
            f"{said} (repository ids asked for: {list(call.repository_ids)})",
            kind="repository_inaccessible",
            installation_id=installation_id,
            repository_ids=call.repository_ids,
        )
    if status == 422 and _PERMISSIONS in lowered and call.permissions is not None:
        asked = ", ".join(f"{name}: {level}" for name, level in sorted(call.permissions.items()))
        detail = f"; GitHub names: {', '.join(errors)}" if errors else ""
        return TokenPermissionNotGranted(
            f"installation {installation_id} does not grant the permissions asked for "
            f"({asked}){detail}",
            installation_id=installation_id,
            permissions=dict(call.permissions),
            github_message=said,
        )
    return None


def _error_text(response: httpx.Response) -> tuple[str, list[str]]:
    """GitHub's `message` and any `errors[]` entries of an error body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip(), []
    if not isinstance(body, dict):
        return "", []
    errors: list[str] = []
    for entry in body.get("errors") or ():
        if isinstance(entry, dict):
            named = entry.get("field") or entry.get("message") or entry.get("code")
            if named:
                errors.append(str(named))
        elif isinstance(entry, str):
            errors.append(entry)
    return str(body.get("message") or ""), errors


def _retry_after(response: httpx.Response) -> float:
    headers = response.headers
    try:
        if "retry-after" in headers:
            return max(float(headers["retry-after"]), 0.0)
        if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
            return max(float(headers["x-ratelimit-reset"]) - time.time(), 0.0)
    except ValueError:
        pass
    return _DEFAULT_RATE_LIMIT_WAIT
