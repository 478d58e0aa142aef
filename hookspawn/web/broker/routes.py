"""The session side of the API: git credentials, the GitHub tool gate, ending a session.

Every route but `/end` authenticates with the session credential (`Authorization: Bearer`),
never the admin token: the sandbox holds that credential and nothing else. `/end` takes the
admin token or the session's own credential (a session may always give up what it holds; the
runner ends each session it ran that way).

`router` serves these on the admin API's listener; `session_router` serves them on the broker
listener (hookspawn/web/server/listeners.py), the one address a session's sandbox may reach, where
`/end` takes the session's own credential only: no admin token, and no loopback trust.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from hookspawn.web.deps import require_admin, runtime
from hookspawn.web.error_models import ADMIN, STORE, UNPARSEABLE, errors
from triggers.session.spec import SessionSpec
from workers.session.broker import Broker, GitRequest

router = APIRouter()
#: the same routes on the broker listener, `/end` by the session's own credential only
session_router = APIRouter()

_BEARER = {
    401: "invalid_credential: the session credential is missing, wrong, expired or revoked",
    429: "too_many_failures: too many failed authentications against this session lately "
    "(see Retry-After)",
}


class GitCredentialBody(BaseModel):
    """The mount by `mountPath`, or the URL git asks about (`host`, `path`, `protocol`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mount_path: str | None = Field(None, alias="mountPath", max_length=4096)
    protocol: str | None = Field(None, max_length=16)
    host: str | None = Field(None, max_length=512)
    path: str | None = Field(None, max_length=4096)


class GitCredential(BaseModel):
    username: str
    password: str
    expiresAt: str
    permissions: dict[str, str]


class ToolList(BaseModel):
    items: list[str]


class ToolCallBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repository: str = Field(min_length=3, max_length=256, pattern=r"^[^/\s]+/[^/\s]+$")
    method: str | None = Field(
        None,
        max_length=64,
        description="the `method` of a tool taking one (pull_request_read, "
        "actions_run_trigger, …): the call is decided by that method's need",
    )


class ToolDecision(BaseModel):
    """The gate's decision on one call; never a token (hookspawn makes GitHub calls itself)."""

    allowed: bool
    permissions: dict[str, str]
    repository: str
    installationId: int


class TokensRevoked(BaseModel):
    revoked: int = Field(description="GitHub tokens of the session GitHub refuses from now on")
    failed: int = Field(description="tokens GitHub could not be asked to revoke (unreachable)")


class Ended(BaseModel):
    id: str
    revoked: int = Field(description="session credentials revoked")
    tokens: TokensRevoked


def broker(request: Request) -> Broker:
    """The runtime's broker; the app's state holds the one its routes use (tests put their own
    there)."""
    found: Broker | None = getattr(request.app.state, "broker", None)
    if found is None:
        found = request.app.state.broker = runtime(request).broker
    return found


def _credential(request: Request) -> str:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


async def _authenticated(request: Request, session_id: str, kind: str) -> SessionSpec:
    return await run_in_threadpool(
        broker(request).authenticate, session_id, _credential(request), kind
    )


async def git_session(request: Request, session_id: str) -> SessionSpec:
    """The session's spec, once its credential checks out (before the body is read)."""
    return await _authenticated(request, session_id, "git")


async def tool_session(request: Request, session_id: str) -> SessionSpec:
    return await _authenticated(request, session_id, "tool")


GitSession = Annotated[SessionSpec, Depends(git_session)]
ToolSession = Annotated[SessionSpec, Depends(tool_session)]


def _decided_on_github(model: type[BaseModel], forbidden: str, not_found: str) -> dict[str, Any]:
    """The route options of a call the broker decides and GitHub may have to answer: the
    session credential's refusals, a body that does not parse, the store, and what is `forbidden`
    (403), `not_found` (404) or GitHub unreachable (503)."""
    return {
        "response_model": model,
        "responses": errors(
            _BEARER,
            UNPARSEABLE,
            STORE,
            {
                403: forbidden,
                404: not_found,
                503: "github_unavailable: GitHub could not be reached",
            },
        ),
    }


_GIT_CREDENTIAL = _decided_on_github(
    GitCredential,
    forbidden="no_git_credential (contents: none or auth: none), repository_not_covered, "
    "repository_access_revoked or permission_not_granted",
    not_found="mount_not_found: no mount of the session has that mountPath or URL",
)


@router.post("/sessions/{session_id}/git-credential", **_GIT_CREDENTIAL)
@session_router.post("/sessions/{session_id}/git-credential", **_GIT_CREDENTIAL)
async def git_credential(
    request: Request,
    session_id: str,
    body: GitCredentialBody,
    spec: GitSession,
) -> dict[str, Any]:
    asked = GitRequest(
        mount_path=body.mount_path, protocol=body.protocol, host=body.host, path=body.path
    )
    return await run_in_threadpool(broker(request).git_credential, session_id, spec, asked)


_TOOLS: dict[str, Any] = {"response_model": ToolList, "responses": errors(_BEARER, STORE)}


@router.get("/sessions/{session_id}/github-tools", **_TOOLS)
@session_router.get("/sessions/{session_id}/github-tools", **_TOOLS)
async def github_tools(request: Request, session_id: str, spec: ToolSession) -> dict[str, Any]:
    return {"items": broker(request).tools(spec)}


_TOOL_CALL = _decided_on_github(
    ToolDecision,
    forbidden="tool_not_granted (also a `method` no capability grants), "
    "invalid_argument (a `method` the tool does not execute), repository_not_covered, "
    "repository_access_revoked or permission_not_granted",
    not_found="unknown_tool: the GitHub tool table has no tool of that name",
)


@router.post("/sessions/{session_id}/github-tools/{tool}", **_TOOL_CALL)
@session_router.post("/sessions/{session_id}/github-tools/{tool}", **_TOOL_CALL)
async def github_tool_call(
    request: Request,
    session_id: str,
    tool: str,
    body: ToolCallBody,
    spec: ToolSession,
) -> dict[str, Any]:
    return await run_in_threadpool(
        broker(request).tool_call, session_id, spec, tool, body.repository, body.method
    )


def _ended_by(request: Request, session_id: str) -> str:
    """Who may end the session: the session's own credential, else the admin token."""
    credential = _credential(request)
    if credential and broker(request).credentials.verify(session_id, credential):
        return "its own credential"
    require_admin(request)
    return "admin"


def _ended_by_itself(request: Request, session_id: str) -> str:
    """On the broker listener only the session's own credential ends it (401 otherwise)."""
    broker(request).authenticate(session_id, _credential(request), "session")
    return "its own credential"


async def _end(request: Request, session_id: str, by: str) -> dict[str, Any]:
    revoked, tokens = await run_in_threadpool(broker(request).end, session_id, by=by)
    return {
        "id": session_id,
        "revoked": revoked,
        "tokens": {"revoked": tokens.revoked + tokens.already, "failed": tokens.failed},
    }


@router.post(
    "/sessions/{session_id}/end",
    response_model=Ended,
    responses=errors(ADMIN, STORE, {404: "session_not_found: no session has this id"}),
)
async def end_session(request: Request, session_id: str) -> dict[str, Any]:
    """Revoke the session's credentials (the broker answers it 401 from now on) and its GitHub
    tokens at GitHub, before answering."""
    by = await run_in_threadpool(_ended_by, request, session_id)
    return await _end(request, session_id, by)


@session_router.post(
    "/sessions/{session_id}/end", response_model=Ended, responses=errors(_BEARER, STORE)
)
async def end_own_session(request: Request, session_id: str) -> dict[str, Any]:
    """The session gives up its credentials and GitHub tokens, with its own credential."""
    by = await run_in_threadpool(_ended_by_itself, request, session_id)
    return await _end(request, session_id, by)
