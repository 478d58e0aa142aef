"""`hookspawn serve --demo` run as root from inside a private (0700) directory, as from root's
home: the runner user cannot enter the data directory, so session roots go elsewhere and the
demo session still succeeds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import wait_for
from tests.hookspawn.cli.test_quickstart import command, quick_start
from tests.procs import environment, start_serve, wait_serving

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the runner user only differs under root"),
]


def test_the_demo_succeeds_as_root_from_inside_a_private_directory() -> None:
    commands, _ = quick_start()
    home = Path(tempfile.mkdtemp(prefix="hookspawn-private-home-"))
    assert home.stat().st_mode & 0o777 == 0o700
    served = start_serve(home, environment({}), argv=command(commands[1]))
    url, log, proc = served.url, served.log, served.proc
    workspaces: Path | None = None
    try:
        wait_serving(served)
        wait_for(lambda: "demo: then open" in log.read_text(), timeout=30)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
        sent = subprocess.run(
            command(commands[2], "--url", url),
            cwd=home, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stdout + sent.stderr
        found = re.match(r"202 queued: delivery (\S+) ", sent.stdout)
        assert found, sent.stdout
        delivery = found.group(1)
        sessions: list[str] = []

        def dispatched() -> bool:
            body = httpx.get(f"{url}/deliveries/{delivery}", timeout=5).json()
            sessions[:] = [o["sessionId"] for o in body.get("outcomes") or [] if "sessionId" in o]
            return bool(sessions)

        wait_for(dispatched, timeout=60)
        ended: dict[str, object] = {}

        def session_ended() -> bool:
            ended.update(httpx.get(f"{url}/sessions/{sessions[0]}", timeout=5).json())
            return ended.get("status") in ("succeeded", "failed", "cancelled")

        wait_for(session_ended, timeout=120)
        workspace = Path(str(ended["workspace"]))
        workspaces = workspace.parent
        assert ended["status"] == "succeeded", (ended.get("failure"), ended.get("logTail"))
        # the session root is outside the private directory, in one the runner made for it
        assert home not in workspace.parents
        assert workspaces.stat().st_uid == 0
        assert workspaces.stat().st_mode & 0o777 == 0o711
        assert (workspace / "workspace" / "widgets" / "src" / "gadget.js").is_file()
        assert "install-workspace-deps" in str(ended["logTail"])
    finally:
        proc.stop(60)
        shutil.rmtree(home, ignore_errors=True)
        if workspaces is not None:
            shutil.rmtree(workspaces, ignore_errors=True)
