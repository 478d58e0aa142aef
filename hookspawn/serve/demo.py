"""`hookspawn serve --demo`: the example agents and a demo connection covering their repository,
on the embedded default (embedded Redis, sessions kept in hookspawn's own store)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hookspawn.cli.client import DEFAULT_URL
from workers.github.connections import ConnectionStore
from workers.github.installation import Installation
from workers.redis_connection import redis_client
from workers.settings import Settings

__all__ = [
    "AGENTS_DIR",
    "INSTALLATION_ID",
    "REPOSITORY",
    "demo_environment",
    "demo_notes",
    "demo_settings",
    "harness_note",
    "record_connection",
    "remove_connection",
]

#: package data: the example agents (examples/.auto in a checkout)
AGENTS_DIR = (Path(__file__).parents[1] / "examples" / "auto").resolve()
#: the demo connection: the installation the sample payloads name, covering acme/widgets
INSTALLATION_ID = 424242
ACCOUNT = "acme"
REPOSITORY = "acme/widgets"
REPOSITORY_ID = 186853002  # the repository id the sample payloads carry
PERMISSIONS = {"contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"}

#: what the demo runs without: an external Redis or dispatch target, a GitHub App (the demo
#: connection is not a real installation: no token could be minted for it)
_NOT_IN_DEMO = (
    "HOOKSPAWN_REDIS_URL",
    "HOOKSPAWN_REDIS_SENTINELS",
    "HOOKSPAWN_REDIS_SENTINEL_MASTER",
    "HOOKSPAWN_REDIS_PASSWORD",
    "HOOKSPAWN_REDIS_PASSWORD_FILE",
    "HOOKSPAWN_REDIS_SENTINEL_PASSWORD",
    "HOOKSPAWN_REDIS_SENTINEL_PASSWORD_FILE",
    "HOOKSPAWN_DISPATCH_URL",
    "HOOKSPAWN_GITHUB_APP_ID",
    "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH",
)


def demo_settings(settings: Settings) -> Settings:
    """`settings` for the demo: the example agents, the embedded default, no GitHub App."""
    return settings.model_copy(
        update={
            "agents_dir": AGENTS_DIR,
            "redis_url": None,
            "redis_sentinels": [],
            "redis_sentinel_master": None,
            "redis_password": None,
            "redis_sentinel_password": None,
            "dispatch_url": None,
            "github_app_id": None,
            "github_private_key_path": None,
        }
    )


def demo_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the demo's web and worker, from the one `serve` was started with."""
    out = {key: value for key, value in env.items() if key not in _NOT_IN_DEMO}
    out["HOOKSPAWN_AGENTS_DIR"] = str(AGENTS_DIR)
    # not the App `github-app create` may have kept in the data directory either
    out["HOOKSPAWN_GITHUB_APP_ID"] = ""
    out["HOOKSPAWN_RUNNER"] = "local"  # sessions are run here: staged, set up, their log kept
    # without a model key a session ends after setup, its harness skipped (saying why)
    out["HOOKSPAWN_HARNESS_WITHOUT_KEY"] = "skip"
    return out


def harness_note(settings: Settings) -> str:
    """What the demo says at start about its sessions' harness (the example agents use
    claude-code): run with the key, or skipped after setup without one."""
    if settings.harness_command:
        return "demo: sessions run HOOKSPAWN_HARNESS_COMMAND after setup"
    if settings.anthropic_api_key:
        return (
            f"demo: sessions run Claude Code after setup (model endpoint "
            f"{settings.anthropic_base_url})"
        )
    return (
        "demo: no model key (HOOKSPAWN_ANTHROPIC_API_KEY): sessions stop after setup, their "
        "harness skipped; set it to run Claude Code"
    )


def record_connection(redis_url: str) -> None:
    """Record the demo connection in the store at `redis_url` (again on every start: a later
    sync or lifecycle event may have changed it)."""
    client = redis_client(redis_url)
    try:
        ConnectionStore(client).replace_installation(
            INSTALLATION_ID,
            Installation(
                id=INSTALLATION_ID,
                account=ACCOUNT,
                repositories={REPOSITORY_ID: REPOSITORY},
                permissions=dict(PERMISSIONS),
                demo=True,
            ),
        )
    finally:
        client.close()


def _is_demo(installation: Installation) -> bool:
    """The demo connection: labelled so, or as an older demo recorded it unlabelled (the
    demo's installation id, account and one repository, by id and name)."""
    return installation.demo or (
        not installation.manual
        and installation.account == ACCOUNT
        and installation.repositories == {REPOSITORY_ID: REPOSITORY}
    )


def remove_connection(redis_url: str) -> bool:
    """Remove the demo connection from the store at `redis_url`, where an earlier demo left
    it; whether there was one."""
    client = redis_client(redis_url)
    try:
        return ConnectionStore(client).remove_if(INSTALLATION_ID, _is_demo)
    finally:
        client.close()


def demo_notes(base_url: str, env: Mapping[str, str]) -> list[str]:
    """What `serve --demo` prints under its banner: what it leaves aside, what runs, what to
    try (`env`: the environment `serve` was started with)."""
    url = "" if base_url == DEFAULT_URL else f" --url {base_url}"
    ignored = [name for name in _NOT_IN_DEMO if env.get(name)]
    return [
        *(
            [f"demo: ignoring {', '.join(ignored)} (the demo runs on the embedded default)"]
            if ignored
            else []
        ),
        f"demo: connection {ACCOUNT} (installation {INSTALLATION_ID}) covers {REPOSITORY}",
        f"demo: in a second shell: hookspawn send --example pull_request.opened{url}",
        f"demo: then open {base_url}/ui",
    ]
