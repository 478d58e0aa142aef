"""The README Quick start, run as written on a machine where only its install ran: real
`hookspawn serve --demo` on a free port, on a PATH without srt, bubblewrap, the harnesses or a
machine redis-server (tests/bare_machine.py), the sample sent from a second process, the
delivery dispatched and its session shown in /ui. The demo then runs its session unconfined,
and says so; where srt works it confines it (tests/hookspawn/cli/test_demo_parts.py)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import loopback
from tests.bare_machine import QUICK_START_ONLY, path_without
from tests.conftest import wait_for
from tests.procs import Served, environment, serving
from tests.workers.session.runner.conftest import git
from workers.session.runner.roots import workspaces_root
from workers.settings import Settings

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[3] / "README.md"
BIN = Path(sys.executable).parent  # the installed commands of the interpreter running the tests


def code_blocks() -> list[str]:
    """The `sh` code blocks of the README's Quick start."""
    section = README.read_text().split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return [part.split("```", 1)[0] for part in section.split("```sh\n")[1:]]


def quick_start() -> tuple[list[str], str]:
    """The commands of the Quick start's run steps, and the block that holds them."""
    block = code_blocks()[0]
    lines = (line.split("   #")[0].rstrip() for line in block.splitlines())
    commands = [line for line in lines if line and not line.startswith("#")]
    return commands, block


def test_the_quick_start_is_these_steps() -> None:
    commands, block = quick_start()
    assert commands == [
        "pip install -c requirements.lock -e '.[dev]'",
        "hookspawn serve --demo",
        "hookspawn send --example pull_request.opened",
    ]
    assert block.index("# in a second shell:") < block.index("hookspawn send")
    assert "# then open the /ui link that serve printed" in block
    assert code_blocks()[1:] == ["pytest\n"]


def command(line: str, *extra: str) -> list[str]:
    """A README command line as argv, `hookspawn` being the installed one."""
    argv = shlex.split(line)
    assert argv[0] == "hookspawn"
    return [str(BIN / "hookspawn"), *argv[1:], *extra]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """Step 2 in a fresh directory (no .auto, no data dir): `hookspawn serve --demo`, on a PATH
    with only what the Quick start's install gives. The
    directory is private (0700), as root's home is: run as root, the session's commands run as
    another account, which cannot enter it, so the runner keeps session roots (and the demo
    its repository) in a directory of its own, removed after."""
    commands, _ = quick_start()
    cwd = Path(tempfile.mkdtemp(prefix="hookspawn-quickstart-"))
    assert cwd.stat().st_mode & 0o777 == 0o700
    try:
        bare = environment({"PATH": path_without(tmp_path, QUICK_START_ONLY)})
        with serving(cwd, bare, argv=command(commands[1])) as served:
            yield served
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.rmtree(workspaces_root(Settings(data_dir=cwd / ".hookspawn")), ignore_errors=True)


def test_the_quick_start_ends_in_a_dispatched_session_shown_in_ui(served: Served) -> None:
    commands, _ = quick_start()
    # done: the tests run in that install
    assert commands[0] == "pip install -c requirements.lock -e '.[dev]'"
    wait_for(lambda: "demo: then open" in served.log.read_text(), timeout=30)
    banner = served.log.read_text()
    assert f"serving on {served.url}" in banner
    assert re.search(r"webhook secret \S{20,}", banner), banner
    ui = re.search(r"deliveries and sessions at (http://\S+/ui)\n", banner)
    assert ui and ui.group(1) == f"{served.url}/ui", banner
    assert "loaded 3 agents from " in banner
    assert "demo: connection acme (installation 424242) covers acme/widgets" in banner
    # without srt the demo runs its sessions unconfined, and says so loudly
    assert "demo: WARNING: srt cannot start here (" in banner, banner
    assert "sessions run UNCONFINED (sandbox backend none, " in banner, banner
    # without a model key the demo's sessions stop after setup, and it says so
    assert "demo: no model key (HOOKSPAWN_ANTHROPIC_API_KEY): sessions stop after setup" in banner
    # printed once the server answers, with no Celery banner or superuser warning around it
    assert banner.index("Uvicorn running on") < banner.index(f"serving on {served.url}")
    assert "[tasks]" not in banner and "SecurityWarning" not in banner, banner

    # step 3, in a second process from the same directory (where serve keeps the secret)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    sent = subprocess.run(
        command(commands[2], "--url", served.url),
        cwd=served.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sent.returncode == 0, sent.stdout + sent.stderr
    found = re.match(
        r"202 queued: delivery (\S+) \(pull_request\); follow it at (\S+)\n", sent.stdout
    )
    assert found, sent.stdout
    delivery, follow = found.groups()
    assert follow == f"{served.url}/ui/deliveries/{delivery}"

    def processed() -> dict[str, object] | None:
        body = loopback.get(f"{served.url}/deliveries/{delivery}", timeout=5).json()
        return body if body.get("status") == "processed" else None

    wait_for(processed, timeout=60)
    record = processed()
    assert record is not None
    outcomes = record["outcomes"]
    assert isinstance(outcomes, list)
    assert [(o["agent"], o["outcome"]) for o in outcomes] == [("pr-review", "dispatched")]
    session = outcomes[0]["sessionId"]

    # step 4: the /ui link of the banner opens the overview, whose deliveries list shows the
    # delivery, then its outcome and its session
    overview = loopback.get(ui.group(1), timeout=5)
    assert overview.status_code == 200 and 'href="/ui/deliveries"' in overview.text
    listing = loopback.get(f"{ui.group(1)}/deliveries", timeout=5)
    assert listing.status_code == 200 and delivery in listing.text
    page = loopback.get(follow, timeout=5)
    assert page.status_code == 200
    assert "dispatched" in page.text and session in page.text
    session_page = loopback.get(f"{served.url}/ui/sessions/{session}", timeout=5)
    assert session_page.status_code == 200
    assert "pr-review" in session_page.text and "Review #2" in session_page.text

    # the same from the CLI: a readable summary, and an error answer in one line
    shown = subprocess.run(
        command(f"hookspawn deliveries show {delivery}", "--url", served.url),
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert shown.returncode == 0
    assert f"pr-review (trigger review): dispatched, session {session}" in shown.stdout
    missing = subprocess.run(
        command("hookspawn sessions show hs-missing", "--url", served.url),
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("hookspawn sessions: GET /sessions/hs-missing: 404 ")
    assert len(missing.stderr.splitlines()) == 1

    # the runner checked out the demo repository's pull request head and set it up
    ended: dict[str, object] = {}

    def session_ended() -> bool:
        ended.update(loopback.get(f"{served.url}/sessions/{session}", timeout=5).json())
        return ended.get("status") in ("succeeded", "failed", "cancelled")

    wait_for(session_ended, timeout=120)
    assert ended["status"] == "succeeded", (ended.get("failure"), ended.get("logTail"))
    workspace = Path(str(ended["workspace"]))
    checkout = workspace / "workspace" / "widgets"
    if os.geteuid() == 0:
        # outside the private directory, in one the runner made for the runner user
        assert served.cwd not in workspace.parents
        assert workspace.parent.stat().st_uid == 0
        assert workspace.parent.stat().st_mode & 0o777 == 0o711
        demo_git = workspace.parent / "demo-git" / "acme" / "widgets.git"
    else:
        demo_git = workspace.parents[1] / "demo-git" / "acme" / "widgets.git"
    pr_head = git(demo_git, "rev-parse", "refs/pull/2/head")
    assert git(checkout, "rev-parse", "HEAD") == pr_head
    assert git(checkout, "status", "--porcelain") == ""
    assert (checkout / "src" / "gadget.js").is_file()  # the pull request's change
    assert "install-workspace-deps" in str(ended["logTail"])
    skipped = ended["harnessRun"]
    assert isinstance(skipped, dict) and skipped["name"] == "claude-code"
    assert str(skipped["skipped"]).startswith("HOOKSPAWN_ANTHROPIC_API_KEY is unset")
    assert "harness claude-code skipped: HOOKSPAWN_ANTHROPIC_API_KEY is unset" in str(
        ended["logTail"]
    )

    # web and worker said at start what they loaded, and from where
    log = served.log.read_text()
    assert log.count("loaded 3 agents from ") >= 3, log
    assert "[tasks]" not in log and "SecurityWarning" not in log, log
    if os.geteuid() == 0:  # one line instead, from the worker (the runner is root by design)
        assert log.count("the worker runs as root: Celery warns against that") == 1, log
    served.proc.popen.send_signal(signal.SIGTERM)
    assert served.proc.popen.wait(60) == 0
