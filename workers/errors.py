"""The workers' exception family: transient (retried), refusals (recorded), configuration."""

from __future__ import annotations

from typing import Any

from templating.errors import Error


class WorkerError(Error):
    """Base of every error the worker side raises on purpose."""

    code = "worker_error"


class Transient(WorkerError):
    """Worth another try later: 5xx, timeouts, rate limits, a store or target briefly away."""

    code = "transient"

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        code: str | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message, code=code, **details)
        self.retry_after = retry_after


class GitHubUnavailable(Transient):
    code = "github_unavailable"


class DispatchUnavailable(Transient):
    code = "dispatch_failed"


class StoreUnavailable(Transient):
    code = "store_unavailable"


class StoreNotReplicated(Transient):
    """A write is on the Redis primary, but fewer replicas than HOOKSPAWN_REDIS_MIN_REPLICAS_ACK
    acknowledged it in time: it could still be lost with the primary."""

    code = "store_not_replicated"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message, retry_after=1.0, **details)


class TokenRefused(WorkerError):
    """GitHub definitively refused a token: the spawn's outcome is recorded, never retried."""

    code = "refused"


class AccessRevoked(TokenRefused):
    """GitHub definitively refused a token: the grant must be pruned.

    `kind` is `installation_deleted`, `installation_suspended` or `repository_inaccessible`.
    """

    code = "repository_access_revoked"

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        installation_id: int,
        repository_ids: tuple[int, ...] = (),
        **details: Any,
    ) -> None:
        super().__init__(message, kind=kind, installation_id=installation_id, **details)
        self.kind = kind
        self.installation_id = installation_id
        self.repository_ids = repository_ids


class TokenPermissionNotGranted(TokenRefused):
    code = "permission_not_granted"


class ConfigurationError(WorkerError):
    """The deployment is misconfigured (bad App credentials, 401): loud, never a prune."""

    code = "configuration_error"


class BrokerError(WorkerError):
    """The credential broker said no to a session; `code` names why."""


class InvalidCredential(BrokerError):
    """The session credential is missing, wrong, expired or revoked."""

    code = "invalid_credential"


class TooManyFailures(InvalidCredential):
    """Too many failed authentications against one session lately: `retryAfter` seconds."""

    code = "too_many_failures"


class BrokerDenied(BrokerError):
    """`no_git_credential`, `repository_not_covered`, `repository_access_revoked`,
    `tool_not_granted`, `permission_not_granted`."""

    code = "broker_denied"


class SessionEnded(BrokerError):
    """`POST /sessions/{id}/end` ended the session: no new credential is issued for it."""

    code = "session_ended"


class BrokerNotFound(BrokerError):
    """`mount_not_found`, `unknown_tool`, `session_not_found`."""

    code = "not_found"


class SessionFailed(WorkerError):
    """A locally run session ends `failed` with this code (`git_auth_failed`,
    `network_unreachable`, `fetch_failed`, `setup_failed`, `setup_timeout`, `secret_missing`,
    `harness_failed`, `harness_unavailable`, `harness_timeout`, `disk_limit_exceeded`)."""

    code = "session_failed"


class SessionRecordInvalid(WorkerError):
    """A stored session or run record that does not read as one (`sessionId`, and where in it
    the first problem is): written by hand, or by a version that shaped it otherwise."""

    code = "session_record_invalid"
