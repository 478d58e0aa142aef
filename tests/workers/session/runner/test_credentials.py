"""A githubApp session's broker credential: issued for the start, handed to git's environment,
never written anywhere."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hookspawn.serve.demo import record_connection
from tests.workers.session.runner.conftest import (
    Hookspawn,
    Origin,
    hookspawn_web,
    runner_settings,
    write_agent,
)
from tests.workers.session.runner.test_lifecycle import MOUNT_GITHUB_APP
from tests.workers.session.runner.test_staging import refusing_host
from workers import keys
from workers.session.runner.run import SessionRunner
from workers.session.runner.service import open_runner_sandbox
from workers.session.runs import SessionRuns
from workers.settings import Settings

CREDENTIAL = "hs-issued-credential-5b1e0d"


def _files_holding(root: Path, text: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text in p.read_bytes()]


@contextmanager
def started_app(
    redis_url: str, shared_dir: Path, origin: Origin, **overrides: Any
) -> Iterator[tuple[Settings, Hookspawn, str]]:
    """A session of a githubApp agent, started on a hookspawn web and not yet run."""
    record_connection(redis_url)
    settings = runner_settings(redis_url, shared_dir, origin, **overrides)
    write_agent(settings.agents_dir, "app", mounts=MOUNT_GITHUB_APP.format(ref="main"))
    with hookspawn_web(settings) as hs:
        yield settings, hs, hs.start("app")


def edit_spec(hs: Hookspawn, session_id: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the session's stored spec (its JSON document) in place."""
    record = keys.session(session_id)
    spec = json.loads(hs.rt.client.hget(record, "spec") or b"{}")
    change(spec)
    hs.rt.client.hset(record, "spec", json.dumps(spec))


def local_runner(
    settings: Settings, hs: Hookspawn, issue: Callable[[str], str | None] | None = None
) -> SessionRunner:
    return SessionRunner(
        settings,
        hs.rt.client,
        "test-runner",
        sandbox=open_runner_sandbox(settings),
        issue_credential=issue,
    )


def _broker_url_only(hs: Hookspawn, session_id: str) -> None:
    """The stored spec names a broker nobody listens at (port 9), by its url only: the
    credential has to come from the runner's issuer."""
    url = "http://127.0.0.1:9/sessions/" + session_id
    edit_spec(hs, session_id, lambda spec: spec.update(broker={"url": url}))


def test_an_issued_credential_reaches_git_and_no_file(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    issued: list[str] = []

    def issue(session_id: str) -> str:
        issued.append(session_id)
        return CREDENTIAL

    with (
        refusing_host() as host,
        started_app(
            redis_url,
            shared_dir,
            origin,
            git_url_rewrite=[f"https://github.com/={host}"],
            # git and its credential helper run as the session's account, which must be able
            # to run this interpreter; a root-run suite may keep it in root's home
            runner_user="",
        ) as (settings, hs, session_id),
    ):
        _broker_url_only(hs, session_id)
        assert local_runner(settings, hs, issue).run(session_id) == "failed"
        run = SessionRuns(hs.rt.client).get(session_id)
    assert issued == [session_id]
    assert run is not None and run.failure is not None and run.workspace is not None
    assert run.failure.code == "git_auth_failed"
    assert "could not authenticate" in run.failure.message
    assert _files_holding(settings.data_dir, CREDENTIAL.encode()) == []
    config = (Path(run.workspace) / "workspace" / "widgets" / ".git" / "config").read_text()
    assert "useHttpPath = true" in config


def test_without_an_issuer_a_broker_url_alone_fails_the_preflight(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    with started_app(redis_url, shared_dir, origin) as (settings, hs, session_id):
        _broker_url_only(hs, session_id)
        assert local_runner(settings, hs).run(session_id) == "failed"
        run = SessionRuns(hs.rt.client).get(session_id)
    assert run is not None and run.failure is not None
    assert run.failure.code == "git_auth_failed"
    assert run.failure.message.endswith("this session has no session credential for it")
