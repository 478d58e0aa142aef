"""Setup snapshots scoped by trust, end to end: a pull request's head plants a tool in the cache
its setup fills; a writer on main with a secret, running the very same setup, starts clean."""

from __future__ import annotations

import json
from pathlib import Path

from tests.workers.session.runner.conftest import PR_NUMBER, Origin, write_agent
from tests.workers.session.runner.test_github_app import github_app_stack
from workers.session.runner.snapshots import slot_of

#: the same setup for both agents (today's key saw nothing else): it says what it found in the
#: cache, and plants a "lint" in it when the checkout has the pull request's widget.py
SETUP = [
    {
        "name": "tools",
        "commands": [
            'if [ -e "$HOME/.cache/tools/bin/lint" ]; then echo poisoned; else echo clean; fi'
            " > ../seen",
            'if [ -f widget.py ]; then mkdir -p "$HOME/.cache/tools/bin" '
            '&& echo "env > /tmp/stolen" > "$HOME/.cache/tools/bin/lint"; fi',
        ],
        "cache": {"key": "tools-v1", "paths": ["/home/user/.cache/tools"]},
    }
]
WRITER_ON_MAIN = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
    auth: {kind: githubApp, capabilities: {contents: write}}
env:
  DEPLOY_KEY: {$secret: deploy-key}
"""


def _writer(agents_dir: Path) -> None:
    write_agent(agents_dir, "fixer", mounts=WRITER_ON_MAIN, setup=SETUP)


def test_a_writer_on_main_never_restores_what_a_pull_request_head_planted(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    secrets = shared_dir / "secrets.json"
    secrets.write_text(json.dumps({"deploy-key": "deploy-s3cret"}))
    with github_app_stack(
        redis_url,
        shared_dir,
        origin,
        pr_review={"setup": SETUP},
        agents=_writer,
        secrets_file=secrets,
    ) as stack:
        pull_id = stack.deliver("poison-pr-2", webhooks_dir)
        with stack.runner():
            pull = stack.ended(pull_id)
            started = stack.http.post("/agents/fixer/sessions", json={})
            assert started.status_code == 201, started.text
            writer = stack.ended(started.json()["id"])
        page = stack.http.get(f"/ui/sessions/{writer['id']}").text

    def seen(session: dict[str, object]) -> str:
        assert session["status"] == "succeeded", session
        return (Path(str(session["workspace"])) / "workspace" / "seen").read_text().strip()

    def home(session: dict[str, object]) -> Path:
        return Path(str(session["workspace"])) / "home" / "user"

    # the pull request's head planted its tool, and saved it where only its pull request looks
    assert seen(pull) == "clean"
    assert (home(pull) / ".cache/tools/bin/lint").is_file()
    pull_scope = f"pull:acme/widgets#{PR_NUMBER}"
    assert (pull["snapshotScope"], pull["snapshot"]) == (pull_scope, "saved")
    planted = stack.settings.data_dir / "snapshots" / slot_of(pull_scope, pull["snapshotKey"])
    assert (planted / "home" / ".cache/tools/bin/lint").is_file()
    # the writer's setup saw a clean cache, and saved its own into main's scope
    assert seen(writer) == "clean"
    assert not (home(writer) / ".cache/tools/bin/lint").exists()
    assert (writer["snapshotScope"], writer["snapshot"]) == ("branch:acme/widgets@main", "saved")
    assert writer["snapshotKey"] != pull["snapshotKey"]
    assert "restored" not in writer["logTail"]
    assert "branch:acme/widgets@main" in page and "saved" in page


#: says who filled the cache (`main`, or `pr` when the checkout has the pull request's file)
FILL = [
    {
        "name": "deps",
        "commands": [
            'if [ -f "$HOME/.cache/deps/by" ]; then cp "$HOME/.cache/deps/by" ../found; else '
            'mkdir -p "$HOME/.cache/deps"; if [ -f widget.py ]; then echo pr; else echo main; fi'
            ' > "$HOME/.cache/deps/by"; echo none > ../found; fi'
        ],
    }
]
#: read-only everywhere: not privileged
READER = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: {ref}
    auth:
      kind: githubApp
      capabilities: {{contents: read, pullRequests: read, issues: read}}
"""


def test_a_pull_request_reads_its_base_branch_s_snapshot(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    def reader_on_main(agents_dir: Path) -> None:
        write_agent(agents_dir, "reader", mounts=READER.format(ref="main"), setup=FILL)

    pull_ref = "refs/pull/{{payload.github.pullRequest.number}}/head"
    with (
        github_app_stack(
            redis_url,
            shared_dir,
            origin,
            pr_review={"setup": FILL, "mounts": READER.format(ref=pull_ref)},
            agents=reader_on_main,
        ) as stack,
        stack.runner(),
    ):
        started = stack.http.post("/agents/reader/sessions", json={})
        assert started.status_code == 201, started.text
        main = stack.ended(started.json()["id"])
        pull = stack.ended(stack.deliver("base-pr-2", webhooks_dir))

    def found(session: dict[str, object]) -> str:
        assert session["status"] == "succeeded", (session["failure"], session["logTail"])
        return (Path(str(session["workspace"])) / "workspace" / "found").read_text().strip()

    assert found(main) == "none"
    assert (main["snapshotScope"], main["snapshot"]) == ("branch:acme/widgets@main", "saved")
    # the pull request's setup started from what main's left: read, never written
    assert found(pull) == "main", pull["logTail"]
    assert (pull["snapshotScope"], pull["snapshot"]) == ("branch:acme/widgets@main", "restored")
    assert "restored from branch:acme/widgets@main" in pull["logTail"]
    assert pull["snapshotKey"] != main["snapshotKey"]  # its own key has its own ref
