"""The demo's local acme/widgets, as `serve --demo` serves it to the runner."""

from __future__ import annotations

from pathlib import Path

from hookspawn.serve.demo_repository import PULL_NUMBER, demo_repository
from tests.workers.session.runner.conftest import (
    Origin,
    git,
    hookspawn_web,
    runner_settings,
    running_runner,
    write_agent,
)


def test_the_demo_repository_serves_the_sample_pull_request_head(
    redis_url: str, shared_dir: Path
) -> None:
    data_dir = shared_dir / "data"
    rewrite = demo_repository(data_dir)
    assert rewrite == f"https://github.com/=file://{(data_dir / 'demo-git').absolute()}/"
    bare = data_dir / "demo-git" / "acme" / "widgets.git"
    head = git(bare, "rev-parse", f"refs/pull/{PULL_NUMBER}/head")
    assert demo_repository(data_dir) == rewrite  # made once, kept
    assert git(bare, "rev-parse", f"refs/pull/{PULL_NUMBER}/head") == head
    origin = Origin(root=data_dir / "demo-git", main=git(bare, "rev-parse", "main"), pr_head=head)
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(
        settings.agents_dir,
        "demo-review",
        ref=f"refs/pull/{PULL_NUMBER}/head",
        setup=[{"name": "deps", "commands": ["test -f package-lock.json"]}],
    )
    with hookspawn_web(settings) as hs, running_runner(settings):
        session = hs.wait_status(hs.start("demo-review"), "succeeded", "failed")
    assert session["status"] == "succeeded", session
    checkout = Path(session["workspace"]) / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == head
    assert (checkout / "src" / "gadget.js").exists()
