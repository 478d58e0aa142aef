"""Sessions run by the local runner, from start to their end, through real HTTP, Celery and git."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path
from typing import Any

import redis

from tests.conftest import wait_for
from tests.workers.session.runner.conftest import (
    PR_NUMBER,
    RUNNER_USER,
    Hookspawn,
    Origin,
    dispatched_session,
    git,
    hookspawn_web,
    runner_process,
    runner_settings,
    running_runner,
    write_agent,
)


def test_a_started_session_is_staged_set_up_and_succeeds(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "builder",
        setup=[{"name": "build", "commands": ["mkdir -p build", "echo built > build/out"]}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session_id = hs.start("builder")
        session = hs.wait_status(session_id, "succeeded", "failed")
    assert session["status"] == "succeeded", session
    assert session["failure"] is None
    workspace = Path(session["workspace"])
    assert workspace == (settings.data_dir / "workspaces" / session_id).absolute()
    checkout = workspace / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.main
    assert (checkout / "build" / "out").read_text() == "built\n"
    assert session["snapshotKey"]
    assert "setup build" in session["logTail"]
    assert set(session["times"]) >= {"queued", "staging", "setup", "running", "succeeded"}


def _subscriptions(client: redis.Redis) -> int:
    clients: list[dict[str, Any]] = client.client_list()
    return sum(int(c.get("psub", 0)) + int(c.get("sub", 0)) for c in clients)


def test_the_runner_listens_on_no_broadcast_channel(
    redis_url: str, redis_client: redis.Redis, shared_dir: Path, origin: Origin
) -> None:
    """Runners take work from their queue only: no remote-control pub/sub whose reads could
    hold up the consumer."""
    settings = runner_settings(redis_url, shared_dir, origin)
    before = _subscriptions(redis_client)
    with running_runner(settings):
        # the consumer is up once it waits on its queue
        wait_for(lambda: any(c.get("cmd") == "brpop" for c in redis_client.client_list()))
        during = _subscriptions(redis_client)
    assert during <= before, redis_client.client_list()


PR_REVIEW_TRIGGER = """\
triggers:
  - kind: github
    name: review
    event: pull_request
    actions: [opened]
    displayTitle: "Review #{{ github.pullRequest.number }}"
    initialPrompt: "Review {{ github.pullRequest.htmlUrl }}"
"""


def widgets_payload(webhooks_dir: Path) -> dict[str, object]:
    """GitHub's pull_request.opened example, moved to acme/widgets (its base; its head stays
    in Codertocat/Hello-World, a fork's as it were)."""
    payload = json.loads((webhooks_dir / "pull_request" / "opened.payload.json").read_text())
    for repository in (payload["repository"], payload["pull_request"]["base"]["repo"]):
        repository["name"] = "widgets"
        repository["full_name"] = "acme/widgets"
        repository["owner"]["login"] = "acme"
    payload["pull_request"]["base"]["ref"] = "main"  # the branch `origin` has
    assert payload["number"] == PR_NUMBER
    return dict(payload)


def test_a_pull_request_opened_delivery_ends_in_a_checkout_of_its_head(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "pr-review",
        ref="refs/pull/{{payload.github.pullRequest.number}}/head",
        setup=[{"name": "deps", "commands": ['echo "deps of $(pwd)" > "$HOME/deps.txt"']}],
        triggers=PR_REVIEW_TRIGGER,
    )
    raw = json.dumps(widgets_payload(webhooks_dir)).encode()
    with (
        hookspawn_web(settings, worker=True) as hs,
        runner_process(settings, shared_dir / "runner.log"),
    ):
        session_id = dispatched_session(hs.http, raw, "runner-pr-2")
        session = hs.wait_status(session_id, "succeeded", "failed", "cancelled")
        page = hs.http.get(f"/ui/sessions/{session_id}").text
        # a replay finds the session there: it is neither queued nor run again
        assert hs.http.post("/deliveries/runner-pr-2/replay").status_code == 202
        wait_for(lambda: len(hs.http.get("/deliveries/runner-pr-2").json()["runs"]) == 2)
        replayed = hs.http.get("/deliveries/runner-pr-2").json()["outcomes"]
        again = hs.session(session_id)
    assert [o["sessionId"] for o in replayed] == [session_id]
    assert again["times"] == session["times"]
    assert session["status"] == "succeeded", session
    checkout = Path(session["workspace"]) / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.pr_head
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    assert sorted(p.name for p in checkout.iterdir()) == [
        ".git",
        ".gitignore",
        "README.md",
        "widget.py",
    ]
    home = Path(session["workspace"]) / "home" / "user"
    # the working directory as the sandbox shows it: the mount's path (root gives each
    # session a mount namespace of its own), else the checkout's host path
    shown = "/workspace/widgets" if os.geteuid() == 0 else checkout
    assert (home / "deps.txt").read_text() == f"deps of {shown}\n"
    assert f"git fetch --depth 1 --no-tags origin refs/pull/{PR_NUMBER}/head" in session["logTail"]
    assert "setup deps" in page and "succeeded" in page
    if os.geteuid() == 0:
        owner = pwd.getpwnam(RUNNER_USER).pw_uid
        assert (checkout / "widget.py").stat().st_uid == owner
        assert (home / "deps.txt").stat().st_uid == owner


#: a githubApp mount of acme/widgets (the credential broker is what it lacks here)
MOUNT_GITHUB_APP = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: {ref}
    auth: {{kind: githubApp, capabilities: {{contents: read}}}}
"""


def _ended(hs: Hookspawn, session_id: str) -> dict[str, Any]:
    return hs.wait_status(session_id, "succeeded", "failed", "cancelled")


def test_deliveries_sent_while_an_in_process_runner_runs_are_dispatched_and_run(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    """The delivery worker and the runner side by side in one process (as the end-to-end tests
    run them) each keep taking their own queue's work, and both stop when the test ends."""
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "pr-review",
        ref="refs/pull/{{payload.github.pullRequest.number}}/head",
        triggers=PR_REVIEW_TRIGGER,
    )
    raw = json.dumps(widgets_payload(webhooks_dir)).encode()
    ended: list[dict[str, Any]] = []
    with hookspawn_web(settings, worker=True) as hs, running_runner(settings):
        for delivery in ("side-by-side-1", "side-by-side-2"):
            ended.append(_ended(hs, dispatched_session(hs.http, raw, delivery)))
    assert [s["status"] for s in ended] == ["succeeded", "succeeded"], ended
    assert ended[0]["id"] != ended[1]["id"]


def test_failure_paths_end_with_their_code(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    secrets = shared_dir / "secrets.json"
    secrets.write_text(json.dumps({"present": "s3cret-value"}))
    settings = runner_settings(redis_url, shared_dir, origin, secrets_file=secrets)
    agents = settings.agents_dir
    write_agent(agents, "no-such-ref", ref="refs/heads/nope")
    write_agent(
        agents,
        "failing-setup",
        setup=[
            {"name": "ok", "commands": ["true"]},
            {"name": "compile", "commands": ["echo compiling", "exit 3", "echo never"]},
        ],
    )
    write_agent(agents, "unset-variable", setup=[{"name": "strict", "commands": ["echo $NOPE"]}])
    write_agent(
        agents,
        "needs-secret",
        env="env:\n  TOKEN: {$secret: absent}\n",
        setup=[{"name": "never", "commands": ['touch "$HOME/ran"']}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings, concurrency=4):
        ids = {
            name: hs.start(name)
            for name in (
                "no-such-ref",
                "failing-setup",
                "unset-variable",
                "needs-secret",
            )
        }
        ended = {name: _ended(hs, session_id) for name, session_id in ids.items()}
        expected = [
            *(
                f'hookspawn_sessions_ended_total{{code="{code}",status="failed"}} 1.0'
                for code in ("fetch_failed", "secret_missing")
            ),
            'hookspawn_sessions_ended_total{code="setup_failed",status="failed"} 2.0',
        ]
        # the runner flushes its counts just after it records each end
        wait_for(
            lambda: all(line in hs.http.get("/metrics").text for line in expected),
            what=lambda: (
                f"{expected} in /metrics; ended: {ended}; found: "
                + str(
                    [x for x in hs.http.get("/metrics").text.splitlines() if "sessions_ended" in x]
                )
            ),
        )
    codes = {name: (s["status"], s["failure"]["code"]) for name, s in ended.items()}
    assert codes == {
        "no-such-ref": ("failed", "fetch_failed"),
        "failing-setup": ("failed", "setup_failed"),
        "unset-variable": ("failed", "setup_failed"),
        "needs-secret": ("failed", "secret_missing"),
    }
    assert "refs/heads/nope" in ended["no-such-ref"]["failure"]["message"]
    assert ended["failing-setup"]["failure"]["message"] == (
        "setup entry 'compile' exited with status 3 at `exit 3`"
    )
    assert ended["unset-variable"]["failure"]["message"].endswith(" at `echo $NOPE`")
    assert "compiling" in ended["failing-setup"]["logTail"]
    assert "never" not in ended["failing-setup"]["logTail"].split("setup compile", 1)[1]
    assert "absent" in ended["needs-secret"]["failure"]["message"]
    assert "TOKEN" in ended["needs-secret"]["failure"]["message"]
    assert not (Path(ended["needs-secret"]["workspace"]) / "home" / "user" / "ran").exists()


def test_a_session_without_a_working_directory_skips_setup(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "no-mounts",
        mounts="",
        setup=[{"name": "never", "commands": ['touch "$HOME/ran"']}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("no-mounts"))
    assert session["status"] == "succeeded", session
    assert "no working directory: setup skipped" in session["logTail"]
    assert "setup never" not in session["logTail"]
    assert not (Path(session["workspace"]) / "home" / "user" / "ran").exists()


def test_a_setup_entry_past_its_timeout_is_stopped(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    settings = runner_settings(redis_url, shared_dir, origin, setup_timeout=1.0)
    marker = "$HOME/after"
    write_agent(
        settings.agents_dir,
        "slow-setup",
        setup=[{"name": "slow", "commands": ["sleep 30", f'touch "{marker}"']}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = _ended(hs, hs.start("slow-setup"))
    assert (session["status"], session["failure"]["code"]) == ("failed", "setup_timeout")
    assert session["failure"]["message"] == (
        "setup entry 'slow' ran longer than 1s and was stopped"
    )
    assert not (Path(session["workspace"]) / "home" / "user" / "after").exists()
