"""The sandbox `serve`'s runner confines its sessions in when HOOKSPAWN_SANDBOX_CONFIG is unset:
a configuration written into the data directory (backend srt, no mounts), and what `serve` says
about it at start. The demo falls back to running its sessions unconfined where srt cannot
start, saying so loudly; `serve` never does on its own: its sessions then fail
`sandbox_unavailable`, and running them unconfined takes a configuration with backend none."""

from __future__ import annotations

import json
from pathlib import Path

from agents.sandbox.config import SandboxConfig
from workers.session.runner.command import Account
from workers.session.runner.sandbox import sandbox_available

__all__ = [
    "DEMO_SANDBOX_FILE",
    "SANDBOX_FILE",
    "demo_sandbox",
    "serve_sandbox",
    "serve_sandbox_note",
    "srt_problem",
]

#: the configurations `serve` and `serve --demo` write, in the data directory
SANDBOX_FILE = "sandbox.json"
DEMO_SANDBOX_FILE = "demo-sandbox.json"

#: how to run sessions unconfined on purpose (development only)
UNCONFINED_SETTING = (
    'set HOOKSPAWN_SANDBOX_CONFIG to a file holding {"sandbox": {"backend": "none"}}'
)


def _write(data_dir: Path, name: str, backend: str) -> Path:
    path = (data_dir / name).absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sandbox": {"backend": backend, "mounts": [], "env": {}}}) + "\n")
    return path


def srt_problem(account: Account | None) -> str | None:
    """Why srt cannot start a sandbox here for `account` (the one session commands run as;
    None: this process's), or None when it can: the runner's own probe."""
    return sandbox_available(SandboxConfig(backend="srt"), account=account)


def serve_sandbox(data_dir: Path) -> Path:
    """Write `serve`'s configuration (backend srt, no mounts); its path."""
    return _write(data_dir, SANDBOX_FILE, "srt")


def serve_sandbox_note(path: Path, why: str | None) -> str:
    """The banner's line on `serve`'s sandbox: confined by srt, or why every session fails
    and what to do about it."""
    if why is None:
        return f"sessions run here, confined by srt (sandbox config {path})"
    return (
        f"WARNING: srt cannot start here ({why}): every session fails sandbox_unavailable "
        f"until it can; to run sessions unconfined instead (development only), "
        f"{UNCONFINED_SETTING}"
    )


def demo_sandbox(data_dir: Path, account: Account | None = None) -> tuple[Path, str]:
    """The demo's configuration, written into the data directory, and a note saying what it
    is: backend srt with no mounts where srt can start here, else backend none (commands run
    unconfined), so the demo still runs its sessions and says loudly that it does not confine
    them."""
    why = srt_problem(account)
    path = _write(data_dir, DEMO_SANDBOX_FILE, "srt" if why is None else "none")
    if why is None:
        return path, f"demo: sessions run confined by srt (sandbox config {path})"
    return path, (
        f"demo: WARNING: srt cannot start here ({why}); sessions run UNCONFINED "
        f"(sandbox backend none, {path})"
    )
