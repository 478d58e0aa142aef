"""`hookspawn github-app manifest|create|forward-command`: the GitHub App the agents need, its
registration through GitHub's manifest flow, and the command that forwards webhooks here."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from urllib.parse import urlencode

from agents import CompiledAgent, compile_dir
from agents.app_manifest import (
    DEFAULT_NAME,
    AppManifest,
    app_manifest,
    forward_commands,
    mounted_repositories,
)
from hookspawn.cli.client import DEFAULT_URL
from hookspawn.cli.settings import load_settings
from hookspawn.errors import CommandError
from workers.settings import Settings

__all__ = ["github_app", "github_apps_new_url"]


def _agents(settings: Settings, given: str | None) -> list[CompiledAgent]:
    directory = Path(given) if given else settings.agents_dir
    result = compile_dir(directory, secret_names=settings.secret_names)
    if not result.ok:
        first, count = result.errors[0], len(result.errors)
        raise CommandError(
            f"{directory}: the agents do not compile ({count} error{'' if count == 1 else 's'}, "
            "first: "
            f"{first}); run `hookspawn check {directory}`",
            exit_code=1,
        )
    return list(result.agents)


def _manifest(args: argparse.Namespace, settings: Settings) -> AppManifest:
    return app_manifest(
        _agents(settings, args.dir),
        public_url=_base(args, settings),
        name=args.name or DEFAULT_NAME,
    )


def _base(args: argparse.Namespace, settings: Settings) -> str:
    """Where this server is reached: --url, HOOKSPAWN_PUBLIC_URL, HOOKSPAWN_URL, the default."""
    given: str = args.url or settings.public_url or settings.url or DEFAULT_URL
    return given.rstrip("/")


def github_apps_new_url(org: str | None) -> str:
    """Where GitHub takes a manifest: the user's or the organization's new-App page."""
    return (
        f"https://github.com/organizations/{org}/settings/apps/new"
        if org
        else "https://github.com/settings/apps/new"
    )


def _secret(settings: Settings) -> str:
    if settings.webhook_secret:
        return settings.webhook_secret[0]
    from workers.github.app_registration import data_dir_secret

    secret = data_dir_secret(settings.data_dir, create=True)
    assert secret is not None
    return secret


def github_app(args: argparse.Namespace) -> int:
    settings = load_settings()
    if args.action == "manifest":
        made = _manifest(args, settings)
        for line in made.reasons:
            print(f"hookspawn github-app: {line}", file=sys.stderr)
        print(
            f"hookspawn github-app: post it as `manifest` to {github_apps_new_url(args.org)}, "
            "or let `hookspawn github-app create` do it",
            file=sys.stderr,
        )
        print(json.dumps(made.manifest, indent=2))
        return 0
    if args.action == "create":
        made = _manifest(args, settings)
        for line in made.reasons:
            print(f"hookspawn github-app: {line}", file=sys.stderr)
        server = _base(args, settings)
        query = {k: v for k, v in (("name", args.name), ("org", args.org)) if v}
        link = f"{server}/github-app/new" + (f"?{urlencode(query)}" if query else "")
        print(
            "hookspawn github-app: open this page of the running server (`hookspawn serve`) "
            "in a browser; it posts the manifest to GitHub, and GitHub brings you back to "
            f"{server}/github-app/callback, which keeps the App's id, key and webhook secret "
            f"in {settings.data_dir}:",
            file=sys.stderr,
        )
        print(link)
        return 0
    base = _base(args, settings)
    agents = _agents(settings, args.dir)
    events = app_manifest(agents, public_url=base, name=DEFAULT_NAME).events
    repositories = [args.repository] if args.repository else mounted_repositories(agents)
    lines = forward_commands(repositories, base_url=base, secret=_secret(settings), events=events)
    if not lines:
        raise CommandError(
            "nothing to forward: the agents have no trigger, or no githubApp mount names a "
            "repository (give --repository OWNER/NAME)",
            exit_code=1,
        )
    for line in lines:
        print(line)
    return 0
