"""What `serve` prints about getting GitHub's webhooks here: the `gh webhook forward` command
for the repositories the agents mount, and how to register the App when none is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents import compile_dir
from agents.app_manifest import agents_forward_commands
from workers.github.app_registration import webhook_secret_source
from workers.settings import Settings

__all__ = ["app_secret_note", "forward_lines"]


def forward_lines(
    settings: Settings, secrets: Sequence[str], base_url: str, *, demo: bool
) -> list[str]:
    """Banner lines: each forward command, with the first of `secrets` (those intake verifies
    with), and, without an App, the command that registers one. Nothing when the agents do
    not compile (the agents line already says why) or name no repository."""
    secret = secrets[0] if secrets else ""
    result = compile_dir(settings.agents_dir, secret_names=settings.secret_names)
    if not result.ok or not secret:
        return []
    commands = agents_forward_commands(list(result.agents), base_url=base_url, secret=secret)
    lines = [f"forward GitHub's webhooks here: {command}" for command in commands]
    if not demo and not settings.github_app_id:
        lines.append(
            "no GitHub App yet: `hookspawn github-app create` registers one for these agents "
            "(or `hookspawn connections add OWNER/NAME` to try without one)"
        )
    return lines


def app_secret_note(settings: Settings, environ: Mapping[str, str]) -> str | None:
    """The banner's note on a webhook secret that is the GitHub App's own (it wins over
    HOOKSPAWN_WEBHOOK_SECRET); None for any other."""
    if not settings.github_app_webhook_secret:
        return None
    return f"{settings.github_app_webhook_secret}  ({webhook_secret_source(settings, environ)})"
