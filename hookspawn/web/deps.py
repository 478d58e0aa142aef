"""Request-scoped access to the process runtime, the admin-token check and the origin check."""

from __future__ import annotations

import hmac

from fastapi import Request

from hookspawn.web.http_errors import ApiError
from hookspawn.web.ui import logins
from workers.runtime import Runtime

#: the /ui sign-in cookie: a login id (hookspawn/web/ui/logins.py); its name predates logins
LOGIN_COOKIE = "hookspawn_session"
#: methods that change nothing, so need no origin check
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def require_admin(request: Request) -> None:
    """`Authorization: Bearer $HOOKSPAWN_ADMIN_TOKEN`, or the /ui login cookie, when a token
    is configured. A request the cookie authenticates that changes state must also come from
    this server's own pages (`same_origin`); a bearer token is never sent by a browser on its
    own, so it needs no such check.
    """
    rt = runtime(request)
    token = rt.settings.admin_token
    if not token:
        same_origin(request, required=False)
        return
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
        return
    cookie = request.cookies.get(LOGIN_COOKIE)
    if cookie and logins.valid(rt.client, token, cookie):
        same_origin(request, required=True)
        return
    raise ApiError("unauthorized", "this endpoint needs Authorization: Bearer <admin token>")


def same_origin(request: Request, *, required: bool) -> None:
    """Refuse (403) a state-changing request that a page of another origin made the browser send.

    `Sec-Fetch-Site` (every current browser) decides; else `Origin`. With neither, the request
    is refused when `required` (it carried the cookie, so a browser sent it), else let through
    (a client that is no browser, on a server with no admin token).
    """
    if request.method in SAFE_METHODS:
        return
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        if site == "same-origin":
            return
        raise _cross_origin(f"Sec-Fetch-Site is {site!r}")
    origin = request.headers.get("origin")
    if origin is not None:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin == own:
            return
        raise _cross_origin(f"Origin {origin!r} is not {own!r}")
    if required:
        raise _cross_origin("it has neither Sec-Fetch-Site nor Origin")


def _cross_origin(why: str) -> ApiError:
    return ApiError(
        "cross_origin_request",
        f"refused: {why}; a request that changes state with the /ui cookie must come from "
        "this server's own pages (or use Authorization: Bearer <admin token>)",
    )
