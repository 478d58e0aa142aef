"""A githubApp session's broker credential: issued for the start, handed to git's environment,
never written anywhere."""

from __future__ import annotations

import json
from pathlib import Path

from hookspawn.demo import record_connection
from tests.runner.conftest import Hookspawn, Origin, hookspawn_web, runner_settings, write_agent
from tests.runner.test_lifecycle import MOUNT_GITHUB_APP
from tests.runner.test_staging import refusing_host
from workers import keys
from workers.runner_service import open_runner_sandbox
from workers.session_runner import SessionRunner
from workers.session_runs import SessionRuns

CREDENTIAL = "hs-issued-credential-5b1e0d"


def _files_holding(root: Path, text: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text in p.read_bytes()]


def _broker_url_only(hs: Hookspawn, session_id: str) -> None:
    """The stored spec names a broker nobody listens at (port 9), by its url only: the
    credential has to come from the runner's issuer."""
    record = keys.session(session_id)
    spec = json.loads(hs.rt.client.hget(record, "spec") or b"{}")
    spec["broker"] = {"url": "http://127.0.0.1:9/sessions/" + session_id}
    hs.rt.client.hset(record, "spec", json.dumps(spec))


def test_an_issued_credential_reaches_git_and_no_file(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    record_connection(redis_url)
    issued: list[str] = []

    def issue(session_id: str) -> str:
        issued.append(session_id)
        return CREDENTIAL

    with refusing_host() as host:
        settings = runner_settings(
            redis_url,
            shared_dir,
            origin,
            git_url_rewrite=[f"https://github.com/={host}"],
            # git and its credential helper run as the session's account, which must be able
            # to run this interpreter; a root-run suite may keep it in root's home
            runner_user="",
        )
        write_agent(settings.agents_dir, "app", mounts=MOUNT_GITHUB_APP.format(ref="main"))
        with hookspawn_web(settings) as hs:
            session_id = hs.start("app")
            _broker_url_only(hs, session_id)
            runner = SessionRunner(
                settings,
                hs.rt.client,
                "test-runner",
                sandbox=open_runner_sandbox(settings),
                issue_credential=issue,
            )
            assert runner.run(session_id) == "failed"
            run = SessionRuns(hs.rt.client).get(session_id)
    assert issued == [session_id]
    assert run is not None
    assert run["failure"]["code"] == "git_auth_failed"
    assert "could not authenticate" in run["failure"]["message"]
    assert _files_holding(settings.data_dir, CREDENTIAL.encode()) == []
    config = (Path(run["workspace"]) / "workspace" / "widgets" / ".git" / "config").read_text()
    assert "useHttpPath = true" in config


def test_without_an_issuer_a_broker_url_alone_fails_the_preflight(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    record_connection(redis_url)
    settings = runner_settings(redis_url, shared_dir, origin)
    write_agent(settings.agents_dir, "app", mounts=MOUNT_GITHUB_APP.format(ref="main"))
    with hookspawn_web(settings) as hs:
        session_id = hs.start("app")
        _broker_url_only(hs, session_id)
        runner = SessionRunner(
            settings, hs.rt.client, "test-runner", sandbox=open_runner_sandbox(settings)
        )
        assert runner.run(session_id) == "failed"
        run = SessionRuns(hs.rt.client).get(session_id)
    assert run is not None
    assert run["failure"]["code"] == "git_auth_failed"
    assert run["failure"]["message"].endswith("this session has no session credential for it")
