"""One tool call's requests to GitHub: a client for the call's token, the repository's REST
and GraphQL calls, and a refusal or no answer as `GitHubToolFailed`.

Every path is built from segments, each checked and percent-encoded by itself
(agents.github_tool_arguments): an argument never adds a segment, a query or a fragment of its
own, and never climbs out of the tool's endpoint. githubkit's generated methods paste their
path parameters into the URL as they are, so the encoding is done here, before githubkit and
httpx build the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException, RequestFailed

from agents.github_tool_arguments import encoded_path, repository_name
from workers.errors import WorkerError
from workers.tls import tls_context


class GitHubToolFailed(WorkerError):
    """GitHub refused the call (`status`, GitHub's message), or could not be reached (0)."""

    code = "github_error"


def token_client(token: str, api_url: str, timeout: float = 30.0) -> GitHub[TokenAuthStrategy]:
    """A githubkit client for one installation token (no retries: the agent decides)."""
    return GitHub(
        TokenAuthStrategy(token),
        base_url=api_url,
        timeout=httpx.Timeout(timeout),
        http_cache=False,
        auto_retry=False,
        rest_api_validate_body=False,
        # a log or an artifact answers a redirect to its download URL: the URL is the answer
        follow_redirects=False,
        ssl_verify=tls_context(),
    )


class ToolCall:
    """The repository's REST calls with one client; every failure as GitHubToolFailed."""

    def __init__(self, github: GitHub[Any], repository: str) -> None:
        self.github = github
        owner, _, repo = repository.partition("/")
        self.base = encoded_path(
            "repos", repository_name(owner, "owner"), repository_name(repo, "repo")
        )

    def send(
        self,
        method: str,
        path: tuple[str | int, ...],
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        accept: str | None = None,
    ) -> httpx.Response:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        headers = {"Accept": accept} if accept else None
        try:
            url = self.base + encoded_path(*path)
        except ValueError as exc:  # a value GitHub answered (a sha, a branch) that is no segment
            raise GitHubToolFailed(f"GitHub answered {exc}", status=0) from None
        return self._request(method, url, params=query or None, json=json, headers=headers)

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One call to GitHub; a refusal or no answer raised as `GitHubToolFailed`."""
        try:
            response = self.github.request(method, url, **kwargs)
        except RequestFailed as exc:
            status = exc.response.status_code
            raise GitHubToolFailed(
                f"{status} {_message(exc.response.raw_response)}", status=status
            ) from None
        except GitHubException as exc:
            raise GitHubToolFailed(
                f"GitHub could not be reached ({type(exc).__name__})", status=0
            ) from None
        return response.raw_response

    def json(self, method: str, path: tuple[str | int, ...], **kwargs: Any) -> Any:
        response = self.send(method, path, **kwargs)
        return response.json() if response.content else None

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        """GitHub's GraphQL API (`POST /graphql`): its `data`; its `errors` as a refusal."""
        response = self._request(
            "POST", "/graphql", json={"query": query, "variables": dict(variables)}
        )
        body = response.json()
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors or not isinstance(body, dict) or not isinstance(body.get("data"), dict):
            shown = "; ".join(str(e.get("message")) for e in errors or () if isinstance(e, dict))
            raise GitHubToolFailed(f"GraphQL: {shown or 'no data'}", status=200)
        return body["data"]


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase
    return str(body.get("message") or response.reason_phrase) if isinstance(body, dict) else ""
