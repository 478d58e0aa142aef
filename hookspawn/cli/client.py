"""The client commands' side of the HTTP API: a running server's base URL and admin token, and
answers turned into data or into one line saying what went wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hookspawn.errors import CommandError

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_URL", "Server", "error_line"]

#: where the client commands look for the server when neither --url nor HOOKSPAWN_URL is given
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Server:
    """A running hookspawn server: its base URL (no trailing slash) and the admin token."""

    base: str
    token: str | None = None
    timeout: float = 120.0

    @classmethod
    def at(cls, url: str | None, *, env_url: str | None, token: str | None) -> Server:
        """The server of `--url`, else of HOOKSPAWN_URL, else the default."""
        base = (url or env_url or DEFAULT_URL).strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise CommandError(
                f"--url {base!r}: not an http(s) URL (e.g. {DEFAULT_URL})", exit_code=2
            )
        return cls(base, token)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content: bytes | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """One request; an unreachable server is a CommandError naming it."""
        import httpx  # here: a command that asks no server (`check`) loads no HTTP client

        from workers.tls import tls_context

        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        target = self.base + path
        try:
            return httpx.request(
                method,
                target,
                json=body,
                content=content,
                params={k: v for k, v in (params or {}).items() if v is not None},
                headers={**auth, **(headers or {})},
                timeout=self.timeout,
                verify=tls_context(),
            )
        except httpx.InvalidURL as exc:
            raise CommandError(f"{target}: not a valid URL: {exc}", exit_code=2) from None
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise CommandError(
                f"cannot reach the server at {self.base}: {reason} (is `hookspawn serve` "
                "running there? pass --url or set HOOKSPAWN_URL)"
            ) from None

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of a 2xx; any other answer is a CommandError with its code and
        message."""
        response = self.request(method, path, **kwargs)
        if not response.is_success:
            raise CommandError(error_line(response))
        try:
            return response.json()
        except ValueError:
            raise CommandError(
                f"{response.request.method} {response.request.url}: "
                f"{response.status_code} answer is not JSON"
            ) from None


def error_line(response: httpx.Response) -> str:
    """`METHOD URL: STATUS code: message` from the server's error body (or its text)."""
    where = f"{response.request.method} {response.request.url.path}"
    try:
        error = response.json().get("error") or {}
        said = f"{error['code']}: {error['message']}"
    except (ValueError, AttributeError, KeyError, TypeError):
        said = " ".join(response.text.split())[:200] or response.reason_phrase
    return f"{where}: {response.status_code} {said}"
