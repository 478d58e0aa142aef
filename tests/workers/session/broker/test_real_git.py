"""The real `git` through git-credential-hookspawn, the broker and a smart-HTTP server that
authorizes each request by what the presented installation token grants (the stand-in)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.workers.session.broker.conftest import BrokerEnv, Session
from workers.session.audit import SessionAudit
from workers.session.broker import Broker
from workers.session.credentials import SessionCredentials

pytestmark = pytest.mark.slow


def _commit(env: BrokerEnv, session: Session, checkout: Path, name: str, text: str) -> None:
    path = checkout / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert env.run_git(session, "add", "-A", cwd=checkout).returncode == 0
    done = env.run_git(session, "commit", "-q", "-m", f"change {name}", cwd=checkout)
    assert done.returncode == 0, done.stderr


def _pushed(env: BrokerEnv, session: Session, checkout: Path) -> tuple[int, str]:
    done = env.run_git(session, "push", "-q", "origin", "HEAD:main", cwd=checkout)
    return done.returncode, done.stderr


def test_contents_read_clones_and_cannot_push(broker_env: BrokerEnv) -> None:
    reader = broker_env.start("reader")
    checkout = broker_env.checkout(reader)
    assert (checkout / "README.md").read_text() == "widgets\n"

    _commit(broker_env, reader, checkout, "notes.txt", "read-only\n")
    code, _ = _pushed(broker_env, reader, checkout)
    assert code != 0
    assert 403 in broker_env.git.statuses()  # the server refused the read-only token
    remote = broker_env.run_git(reader, "ls-remote", "origin", "refs/heads/main", cwd=checkout)
    head = broker_env.run_git(reader, "rev-parse", "HEAD~1", cwd=checkout).stdout.strip()
    assert remote.stdout.split()[0] == head  # main did not move


def test_contents_write_pushes_but_not_workflows(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    checkout = broker_env.checkout(writer)

    _commit(broker_env, writer, checkout, "src/app.py", "print('hi')\n")
    code, stderr = _pushed(broker_env, writer, checkout)
    assert code == 0, stderr

    _commit(broker_env, writer, checkout, ".github/workflows/ci.yml", "on: push\n")
    code, stderr = _pushed(broker_env, writer, checkout)
    assert code != 0
    assert "lacks workflows: write" in stderr


def test_workflows_write_pushes_workflow_changes(broker_env: BrokerEnv) -> None:
    session = broker_env.start("workflows")
    checkout = broker_env.checkout(session)
    _commit(broker_env, session, checkout, ".github/workflows/ci.yml", "on: push\n")
    code, stderr = _pushed(broker_env, session, checkout)
    assert code == 0, stderr
    fresh = broker_env.checkout(session, "again")
    assert (fresh / ".github/workflows/ci.yml").read_text() == "on: push\n"


def test_contents_none_gets_no_credential_and_git_says_why(broker_env: BrokerEnv) -> None:
    blind = broker_env.start("blind")
    before = broker_env.github.count("access_tokens")
    cloned, _ = broker_env.clone(blind)
    assert cloned.returncode != 0
    assert "git-credential-hookspawn: HTTP 403 no_git_credential" in cloned.stderr
    assert broker_env.github.count("access_tokens") == before  # nothing minted


def test_revoked_session_credential_is_refused(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    broker_env.checkout(writer)
    ended = broker_env.client.post(f"/sessions/{writer.id}/end")
    assert ended.status_code == 200
    assert ended.json() == {"id": writer.id, "revoked": 1, "tokens": {"revoked": 1, "failed": 0}}

    cloned, _ = broker_env.clone(writer, "after-end")
    assert cloned.returncode != 0
    assert "HTTP 401 invalid_credential" in cloned.stderr


def test_expired_session_credential_is_refused(broker_env: BrokerEnv) -> None:
    writer = broker_env.start("writer")
    rt = broker_env.rt
    # the broker as the server builds it, but reading the time 25 hours from now
    later = SessionCredentials(rt.client, clock=lambda: time.time() + 25 * 3600)
    app_broker = Broker(
        sessions=rt.sessions,
        credentials=later,
        audit=SessionAudit(rt.client),
        connections=rt.connections,
        tokens=None,
        rewrites=rt.settings.git_url_rewrite,
    )
    broker_env.app.state.broker = app_broker
    cloned, _ = broker_env.clone(writer, "expired")
    assert cloned.returncode != 0
    assert "HTTP 401 invalid_credential" in cloned.stderr


def test_one_repository_mounted_twice_each_checkout_gets_its_own_mounts_credential(
    broker_env: BrokerEnv,
) -> None:
    """`twice` mounts acme/widgets at /w/ro (contents read) and /w/rw (contents and workflows
    write): each checkout's helper names its mount, so git in /w/ro cannot push and git in
    /w/rw can, workflow changes included; by URL alone the first mount answers, as before."""
    session = broker_env.start("twice")
    ro = broker_env.checkout(session, "ro", mount="/w/ro")
    _commit(broker_env, session, ro, "from-ro.txt", "ro\n")
    pushed = broker_env.run_git(session, "push", "-q", "origin", "HEAD:main", cwd=ro, mount="/w/ro")
    assert pushed.returncode != 0
    assert 403 in broker_env.git.statuses()

    rw = broker_env.checkout(session, "rw", mount="/w/rw")
    _commit(broker_env, session, rw, ".github/workflows/ci.yml", "on: push\n")
    pushed = broker_env.run_git(session, "push", "-q", "origin", "HEAD:main", cwd=rw, mount="/w/rw")
    assert pushed.returncode == 0, pushed.stderr
    fresh = broker_env.checkout(session, "fresh", mount="/w/ro")
    assert (fresh / ".github/workflows/ci.yml").read_text() == "on: push\n"

    by_url = broker_env.git_credential(
        session, protocol="http", host=broker_env.git.url.split("://")[1], path="acme/widgets.git"
    )
    assert by_url.json()["permissions"] == {"contents": "read", "metadata": "read"}
    # a mountPath with a URL that mount is not fetched from: no credential for that server
    elsewhere = broker_env.git_credential(
        session, mountPath="/w/rw", protocol="https", host="evil.example", path="acme/widgets"
    )
    assert elsewhere.status_code == 404
    assert elsewhere.json()["error"]["code"] == "mount_not_found"

    audit = broker_env.client.get(f"/sessions/{session.id}").json()["audit"]
    git = [(a["mountPath"], a["result"]) for a in reversed(audit) if a["kind"] == "git"]
    assert ("/w/ro", "allowed") in git and ("/w/rw", "allowed") in git
    rw_grants = [
        a["permissions"]
        for a in audit
        if (a["kind"], a["result"], a.get("mountPath")) == ("git", "allowed", "/w/rw")
    ]
    assert rw_grants and all(p.get("workflows") == "write" for p in rw_grants)
