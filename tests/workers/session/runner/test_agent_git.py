"""The agent's own git, inside srt as the runner user: a harness commits and pushes over smart
HTTP through the session's credential helper and the broker, with what its mounts grant."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.git_server import PRE_RECEIVE, make_bare_repository
from tests.secret_scan import file_haystacks, leaks
from tests.workers.session.runner.conftest import RUNNER_USER, Origin, git
from tests.workers.session.runner.test_github_app import INSTALLATION, github_app_stack

MOUNTS = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
    auth: {kind: githubApp, capabilities: {contents: write}}
  - kind: git
    repository: acme/gadgets
    mountPath: /workspace/gadgets
    ref: main
    auth: {kind: githubApp, capabilities: {contents: read}}
"""

#: the harness: in /workspace/widgets (the first mount), each push's exit status noted
HARNESS = """\
export GIT_AUTHOR_NAME=Agent GIT_AUTHOR_EMAIL=agent@example.com
export GIT_COMMITTER_NAME=Agent GIT_COMMITTER_EMAIL=agent@example.com
out=../pushes.txt
command -v git-credential-hookspawn > ../helper.txt
git checkout -q -b agent/change
echo 'a change' >> README.md
git commit -qam 'agent: a change'
git push origin agent/change; echo "change $?" >> $out
git checkout -q -b agent/workflow
mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml
git add .github && git commit -qm 'agent: a workflow'
git push origin agent/workflow; echo "workflow $?" >> $out
cd ../gadgets
git checkout -q -b agent/read
echo read > read.txt && git add read.txt && git commit -qm 'agent: on a read-only mount'
git push origin agent/read; echo "read $?" >> $out
"""

#: setup sees what the harness sees
SETUP = [
    {
        "name": "env",
        "commands": [
            "command -v git-credential-hookspawn > ../setup-helper.txt",
            'echo "$HOOKSPAWN_BROKER_URL" > ../broker.txt',
            'test -n "$HOOKSPAWN_SESSION_CREDENTIAL"',
        ],
    }
]


def test_a_harness_in_the_sandbox_pushes_through_the_broker_with_what_its_mounts_grant(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    widgets = origin.root / "acme" / "widgets.git"
    (widgets / "hooks" / "pre-receive").write_text(PRE_RECEIVE)
    (widgets / "hooks" / "pre-receive").chmod(0o755)
    gadgets = make_bare_repository(origin.root, "acme/gadgets", {"README.md": "gadgets\n"})
    harness = f"/bin/sh -c {shlex.quote(HARNESS)}"
    with github_app_stack(
        redis_url,
        shared_dir,
        origin,
        pr_review={"mounts": MOUNTS, "setup": SETUP},
        harness_command=harness,
        runner_user=RUNNER_USER,
    ) as stack:
        session_id = stack.deliver("app-agent-push", webhooks_dir)
        with stack.runner():
            session = stack.ended(session_id)
        tools = stack.settings.data_dir / "workspaces" / f"{session_id}.tools"
    assert session["status"] == "succeeded", (session["failure"], session["logTail"])
    root = Path(session["workspace"]) / "workspace"
    pushes = dict(line.split() for line in (root / "pushes.txt").read_text().splitlines())
    assert pushes["change"] == "0", session["logTail"]
    assert pushes["workflow"] != "0" and pushes["read"] != "0", pushes
    # the setup and harness PATH leads to the session's own helper, beside its root
    helper = str(tools / "git-credential-hookspawn")
    assert (root / "helper.txt").read_text().strip() == helper
    assert (root / "setup-helper.txt").read_text().strip() == helper
    broker = f"{stack.settings.broker_base_url}/sessions/{session_id}"
    assert (root / "broker.txt").read_text().strip() == broker
    # the push landed; the workflow's and the read-only mount's did not
    pushed = git(widgets, "rev-parse", "refs/heads/agent/change")
    assert pushed == git(root / "widgets", "rev-parse", "agent/change")
    assert git(widgets, "log", "-1", "--format=%s", "agent/change") == "agent: a change"
    assert git(widgets, "for-each-ref", "refs/heads/agent/workflow") == ""
    assert git(gadgets, "for-each-ref", "refs/heads/agent") == ""
    log = session["logTail"]
    assert "it changes .github/workflows/ and the token lacks workflows: write" in log
    assert "acme/gadgets.git/': The requested URL returned error: 403" in log
    # the auth preflight ran inside the sandbox, with the harness's helper and environment
    assert "auth preflight: git ls-remote origin for /workspace/gadgets" in log
    # each mount's git credential carried its own grant
    granted = [
        stack.github.token_grant(token)
        for label, token in stack.secrets.items()
        if label.startswith("installation token")
    ]
    write = (INSTALLATION, (101,), {"contents": "write", "metadata": "read"})
    read = (INSTALLATION, (102,), {"contents": "read", "metadata": "read"})
    assert {json.dumps(g, sort_keys=True) for g in granted} == {
        json.dumps(write, sort_keys=True),
        json.dumps(read, sort_keys=True),
    }, granted
    # no token and no session credential on disk: the data directory, the session's tools
    files = [p for p in stack.settings.data_dir.rglob("*") if p.is_file()]
    assert tools / "git-credential-hookspawn" in files
    found, scanned = leaks(stack.secrets, file_haystacks(files))
    assert found == []
    assert scanned == len(files)


WRITER = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
    auth:
      kind: githubApp
      commitAuthor: {name: Widget Agent, email: agent@example.com}
"""


def _readme_harness() -> str:
    """The HOOKSPAWN_HARNESS_COMMAND the docs show for an agent's git, as a shell reads it."""
    readme = (Path(__file__).resolve().parents[4] / "docs" / "runner-and-sandbox.md").read_text()
    line = next(
        line for line in readme.splitlines() if line.startswith("HOOKSPAWN_HARNESS_COMMAND='")
    )
    return shlex.split(line)[0].partition("=")[2]


def test_the_readme_harness_pushes_its_branch(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    with github_app_stack(
        redis_url,
        shared_dir,
        origin,
        pr_review={"mounts": WRITER, "setup": []},
        harness_command=_readme_harness(),
        runner_user=RUNNER_USER,
    ) as stack:
        session_id = stack.deliver("app-readme-push", webhooks_dir)
        with stack.runner():
            session = stack.ended(session_id)
    assert session["status"] == "succeeded", session["logTail"]
    widgets = origin.root / "acme" / "widgets.git"
    branch = f"refs/heads/agent/{session_id}"
    assert git(widgets, "log", "-1", "--format=%s %cn", branch) == "agent: hello Widget Agent"
