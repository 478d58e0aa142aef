"""Registering the GitHub App from the agents: GET /github-app/new (a form posting the manifest
to GitHub with a one-time state) and GET /github-app/callback (the code exchanged for the App's
credentials, kept in the data directory)."""

from __future__ import annotations

import json
from html import escape
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from agents.app_manifest import app_manifest
from hookspawn.web.deps import require_admin, runtime
from workers.agents_source import AgentsSource
from workers.delivery.pipeline import SpawnPipeline
from workers.github.app_registration import (
    convert_code,
    github_web_url,
    issue_state,
    save_app,
    take_state,
)

#: answers: 200 with a page; 400 invalid_state (the state is missing, unknown, expired or used),
#: invalid_request (no code, a malformed org or name), conversion_refused (GitHub refused the
#: code); 401 without the admin token; 503 github_unavailable or store_unavailable
router = APIRouter(dependencies=[Depends(require_admin)])

_DEFAULT_NAME = "hookspawn"
_ACCOUNT = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title></head><body><h1>{escape(title)}</h1>{body}</body></html>",
        headers={"cache-control": "no-store"},
    )


# browser pages, like /ui: left out of the OpenAPI document
@router.get("/github-app/new", response_class=HTMLResponse, include_in_schema=False)
async def new_app(
    request: Request,
    name: Annotated[str | None, Query(min_length=1, max_length=34)] = None,
    org: Annotated[str | None, Query(pattern=_ACCOUNT)] = None,
) -> HTMLResponse:
    """A form that posts the agents' manifest to GitHub (the user's account, or `org`)."""
    rt = runtime(request)
    public_url = (rt.settings.public_url or str(request.base_url)).rstrip("/")

    def prepare() -> tuple[dict[str, object], list[str], str]:
        pipeline = rt.pipeline
        source: AgentsSource | None = (
            pipeline.agents if isinstance(pipeline, SpawnPipeline) else None
        )
        agents = list(source.current().agents) if source is not None else []
        made = app_manifest(agents, public_url=public_url, name=name or _DEFAULT_NAME)
        return made.manifest, made.reasons, issue_state(rt.client, org=org)

    manifest, reasons, state = await run_in_threadpool(prepare)
    web = github_web_url(rt.settings.github_api_url)
    where = f"{web}/organizations/{org}" if org else web
    action = f"{where}/settings/apps/new?state={quote(state)}"
    items = "".join(f"<li>{escape(line)}</li>" for line in reasons)
    body = (
        f"<p>Register a GitHub App for this server ({escape(public_url)})"
        f"{' in the organization ' + escape(org) if org else ''}: GitHub shows the App with "
        "the permissions and events below, you confirm, and GitHub sends you back here.</p>"
        f"<ul>{items}</ul>"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="manifest" value="{escape(json.dumps(manifest))}">'
        '<button type="submit">Create the GitHub App on GitHub</button></form>'
    )
    return _page("Create the GitHub App", body)


@router.get("/github-app/callback", response_class=HTMLResponse, include_in_schema=False)
async def callback(
    request: Request, code: str | None = None, state: str | None = None
) -> HTMLResponse:
    """GitHub's redirect after the App was created: exchange the code, keep the credentials."""
    rt = runtime(request)
    settings = rt.settings

    def finish() -> HTMLResponse:
        take_state(rt.client, state)
        app = save_app(settings.data_dir, convert_code(settings.github_api_url, code))
        install = escape(app.install_url)
        body = (
            f"<p>GitHub App <b>{escape(app.slug)}</b> (id {app.id}) is registered. Its id, "
            f"private key and webhook secret are kept in {escape(str(settings.data_dir))} "
            "(the key and the secret readable by this account only).</p>"
            f'<p>Next: <a href="{install}">install it on your repositories</a> ({install}), '
            "then restart <code>hookspawn serve</code> (or <code>web</code> and "
            "<code>worker</code>) so they use it: they read the App from the data directory "
            "when HOOKSPAWN_GITHUB_APP_ID, HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH and "
            "HOOKSPAWN_WEBHOOK_SECRET are unset.</p>"
        )
        return _page("GitHub App created", body)

    return await run_in_threadpool(finish)
