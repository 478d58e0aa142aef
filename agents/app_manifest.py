"""The GitHub App manifest the agents need (pure): the permissions their mounts ask for and the
events their triggers listen to, in GitHub's manifest format; and the `gh webhook forward`
commands that bring those events for the repositories they mount.

GitHub's manifest format: https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
Which permission each webhook event needs: https://docs.github.com/en/webhooks/webhook-events-and-payloads
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agents.model import CompiledAgent

__all__ = [
    "COVERAGE_EVENTS",
    "DEFAULT_NAME",
    "EVENT_PERMISSIONS",
    "IMPLICIT_EVENTS",
    "AppManifest",
    "agents_forward_commands",
    "app_manifest",
    "forward_commands",
    "mounted_repositories",
    "reachable_by_github",
    "webhook_url",
]

#: the App's name when none is given (GitHub lets it be edited before creating)
DEFAULT_NAME = "hookspawn"

#: events every App receives without asking; GitHub refuses them in `default_events`
IMPLICIT_EVENTS = frozenset({"installation", "installation_repositories"})

#: events the service needs whatever the triggers: `repository` created, renamed, transferred,
#: deleted … keep each connection's coverage current (workers.github.lifecycle); the other
#: lifecycle events, `installation*`, GitHub sends to every App anyway
COVERAGE_EVENTS = frozenset({"repository"})

#: the repository (or organization) permission that lets an App subscribe to each event; the
#: first one is asked for (at read) when no mount asks for any of them
EVENT_PERMISSIONS: dict[str, tuple[str, ...]] = {
    "push": ("contents",),
    "create": ("contents",),
    "delete": ("contents",),
    "release": ("contents",),
    "commit_comment": ("contents",),
    "gollum": ("contents",),
    "pull_request": ("pull_requests",),
    "pull_request_review": ("pull_requests",),
    "pull_request_review_comment": ("pull_requests",),
    "pull_request_review_thread": ("pull_requests",),
    "issues": ("issues",),
    "issue_comment": ("issues", "pull_requests"),
    "milestone": ("issues", "pull_requests"),
    "label": ("metadata",),
    "public": ("metadata",),
    "repository": ("metadata",),
    "star": ("metadata",),
    "watch": ("metadata",),
    "fork": ("metadata",),
    "meta": ("metadata",),
    "check_run": ("checks",),
    "check_suite": ("checks",),
    "workflow_run": ("actions",),
    "workflow_job": ("actions",),
    "workflow_dispatch": ("actions",),
    "status": ("statuses",),
    "deployment": ("deployments",),
    "deployment_status": ("deployments",),
    "discussion": ("discussions",),
    "discussion_comment": ("discussions",),
    "merge_group": ("merge_queues",),
    "member": ("members",),
    "membership": ("members",),
    "team": ("members",),
    "organization": ("members",),
    "repository_dispatch": ("contents",),
    "branch_protection_rule": ("administration",),
    "security_and_analysis": ("administration",),
}

_LEVELS = {"none": 0, "read": 1, "write": 2}


@dataclass
class AppManifest:
    """The manifest, and one line per permission and event saying which agent needs it."""

    manifest: dict[str, Any]
    reasons: list[str] = field(default_factory=list)

    @property
    def permissions(self) -> dict[str, str]:
        return dict(self.manifest["default_permissions"])

    @property
    def events(self) -> list[str]:
        return list(self.manifest["default_events"])


def reachable_by_github(public_url: str) -> bool:
    """False for a loopback or private address (`127.0.0.1`, `localhost`, `10.x`): GitHub
    refuses a webhook URL "not reachable over the public Internet"."""
    host = (urlsplit(public_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost") or not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True
    return not (address.is_private or address.is_loopback or address.is_link_local)


def webhook_url(public_url: str) -> str:
    """Where GitHub delivers the App's webhooks: `<public url>/webhooks/github`."""
    return public_url.rstrip("/") + "/webhooks/github"


def _event_needs(event: str, who: list[str], permissions: dict[str, str]) -> list[str]:
    """Why `event` is subscribed to (the agents whose triggers use it, or coverage), adding
    the permission GitHub needs to send it when no asked-for one backs it."""
    reasons = []
    backing = EVENT_PERMISSIONS.get(event, ())
    agents_line = ", ".join(sorted(set(who))) or "the connections"
    if backing and not any(p in permissions for p in backing):
        permissions[backing[0]] = "read"
        reasons.append(
            f"permission {backing[0]}: read so that GitHub sends {event} (for {agents_line})"
        )
    if who:
        reasons.append(f"event {event}: triggers of {agents_line}")
    if event in COVERAGE_EVENTS:
        reasons.append(
            f"event {event}: connections follow its repositories' renames, transfers and deletions"
        )
    return reasons


def app_manifest(agents: Iterable[CompiledAgent], *, public_url: str, name: str) -> AppManifest:
    """The manifest registering an App that serves `agents` from `public_url`.

    Each permission at the highest level any githubApp mount asks for (a capability the mount
    leaves out counts at its default), `metadata: read` always, the events the triggers use
    and the coverage events (COVERAGE_EVENTS); an event no asked-for permission backs adds the
    permission it needs at `read`.
    """
    permissions: dict[str, str] = {"metadata": "read"}
    needs: dict[str, list[str]] = {}
    events: dict[str, list[str]] = {}
    for agent in sorted(agents, key=lambda a: a.name):
        for mount in agent.mounts:
            if mount.auth.kind != "githubApp":
                continue
            for permission, level in mount.auth.capabilities.token_permissions().items():
                if permission == "metadata":
                    continue
                if _LEVELS[level] > _LEVELS.get(permissions.get(permission, "none"), 0):
                    permissions[permission] = level
                needs.setdefault(permission, []).append(
                    f"{agent.name} (mount {mount.mount_path}: {level})"
                )
        for trigger in agent.triggers:
            if trigger.event not in IMPLICIT_EVENTS:
                events.setdefault(trigger.event, []).append(agent.name)
    reasons = [
        f"permission {p}: {permissions[p]} for {', '.join(who)}" for p, who in sorted(needs.items())
    ]
    for event in COVERAGE_EVENTS:
        events.setdefault(event, [])
    for event, who in sorted(events.items()):
        reasons += _event_needs(event, who, permissions)
    reachable = reachable_by_github(public_url)
    if not reachable:
        reasons.append(
            f"webhook inactive: GitHub cannot reach {public_url}; forward deliveries with "
            "`hookspawn github-app forward-command`, or give a public --url (a tunnel)"
        )
    manifest = {
        "name": name,
        "url": public_url,
        # GitHub refuses an active webhook it cannot reach: on a laptop it is created inactive,
        # and deliveries come through `gh webhook forward` instead
        "hook_attributes": {"url": webhook_url(public_url), "active": reachable},
        "redirect_url": public_url.rstrip("/") + "/github-app/callback",
        "public": False,
        "default_permissions": dict(sorted(permissions.items())),
        "default_events": sorted(events),
    }
    return AppManifest(manifest, reasons)


def mounted_repositories(agents: Iterable[CompiledAgent]) -> list[str]:
    """The repositories (owner/name) the agents' githubApp mounts check out."""
    return sorted(
        {
            mount.github_repository or mount.repository
            for agent in agents
            for mount in agent.mounts
            if mount.auth.kind == "githubApp"
        },
        key=str.lower,
    )


def forward_commands(
    repositories: Iterable[str], *, base_url: str, secret: str, events: list[str]
) -> list[str]:
    """One `gh webhook forward` command per repository, for `events`, to this server."""
    if not events:
        return []
    return [
        shlex.join(
            [
                "gh",
                "webhook",
                "forward",
                f"--repo={repository}",
                f"--events={','.join(events)}",
                f"--url={webhook_url(base_url)}",
                f"--secret={secret}",
            ]
        )
        for repository in repositories
    ]


def agents_forward_commands(
    agents: list[CompiledAgent], *, base_url: str, secret: str
) -> list[str]:
    """The forward commands for every repository the agents mount, with their events."""
    events = app_manifest(agents, public_url=base_url, name=DEFAULT_NAME).events
    return forward_commands(
        mounted_repositories(agents), base_url=base_url, secret=secret, events=events
    )
