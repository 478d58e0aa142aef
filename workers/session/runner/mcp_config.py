"""The session's MCP endpoint for setup and harness: its URL and a Claude Code `--mcp-config` file.

The file holds the session credential, so it lives in the session root but outside the
session's home (a setup snapshot holds only what setup produced in the home), readable by the
session's account alone, and is removed when the run ends. Its shape is what
`claude --mcp-config` reads: `{"mcpServers": {"github": {"type": "http", "url", "headers"}}}`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from workers.session.runner.command import Account
from workers.session.runner.staging import BrokerLink

__all__ = ["CONFIG_DIR", "mcp_env", "remove_mcp_config"]

#: beside the mounts and the home in the session root, never inside the home
CONFIG_DIR = ".hookspawn"
CONFIG_FILE = "mcp.json"


def mcp_env(workspace: Path, link: BrokerLink | None, account: Account | None) -> dict[str, str]:
    """`HOOKSPAWN_MCP_URL` (the broker's `/mcp`) and `HOOKSPAWN_MCP_CONFIG` (the file, written
    now) for a session with a broker and a credential; nothing for one without."""
    if link is None or not link.credential:
        return {}
    url = f"{link.url.rstrip('/')}/mcp"
    config = {
        "mcpServers": {
            "github": {
                "type": "http",
                "url": url,
                "headers": {"Authorization": f"Bearer {link.credential}"},
            }
        }
    }
    directory = workspace / CONFIG_DIR
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            raise ValueError(
                f"{directory} is in the way of the MCP config: not a directory"
            ) from None
    path = directory / CONFIG_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(config, out)
    if account is not None:
        for made in (directory, path):
            os.chown(made, account.uid, account.gid, follow_symlinks=False)
    return {"HOOKSPAWN_MCP_URL": url, "HOOKSPAWN_MCP_CONFIG": str(path)}


def remove_mcp_config(workspace: Path) -> None:
    """Remove the file (its credential is revoked when the session ends, and gone from disk)."""
    with contextlib.suppress(FileNotFoundError):
        (workspace / CONFIG_DIR / CONFIG_FILE).unlink()
    with contextlib.suppress(OSError):  # left when the session put something of its own there
        (workspace / CONFIG_DIR).rmdir()
