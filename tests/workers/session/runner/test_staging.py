"""Staging mounts with the real git: init or reuse, fetch, detached checkout, reset, clean;
identity; the auth preflight; no token on disk."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from tests.workers.session.runner.conftest import PR_NUMBER, RUNNER_USER, Origin, git, hand_over
from triggers.session.spec import Requester, SessionMount
from workers.errors import SessionFailed
from workers.session.runner.command import account_of, run_command
from workers.session.runner.staging import (
    BrokerLink,
    Staging,
    git_config_for,
    host_path,
    parse_rewrites,
    rewritten,
    stage_mounts,
)

CREDENTIAL = "hs-session-credential-7f3a9c"


@pytest.fixture
def log_file(shared_dir: Path) -> Iterator[BinaryIO]:
    with (shared_dir / "log").open("ab") as handle:
        yield handle


def _staging(
    workspace: Path,
    rewrite: str,
    handle: BinaryIO,
    broker: Mapping[str, str] | None = None,
    notes: list[str] | None = None,
) -> Staging:
    account = account_of(RUNNER_USER)
    notes = [] if notes is None else notes
    rewrites = parse_rewrites([rewrite])
    gitconfig = workspace.parent / "gitconfig"
    gitconfig.write_text(git_config_for(["https://github.com/acme/widgets.git"], rewrites))

    def run_git(args: Sequence[str], cwd: Path, env: Mapping[str, str]) -> int:
        argv = ["git"]
        for source, target in rewrites:
            argv += ["-c", f"url.{target}.insteadOf={source}"]
        return run_command(
            [*argv, *args],
            cwd=cwd,
            env={
                "PATH": os.environ["PATH"],
                "HOME": str(workspace),
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": str(gitconfig),
                **env,
            },
            timeout=60,
            log=handle,
            cancel=lambda: False,
            account=account,
        )

    workspace.mkdir(parents=True, exist_ok=True)
    if account:
        os.chown(workspace, account.uid, account.gid)
    return Staging(
        workspace=workspace,
        git=run_git,
        note=notes.append,
        account=account,
        helper="/nonexistent/git-credential-hookspawn",
        broker=BrokerLink(broker["url"], broker["credential"]) if broker else None,
        rewrites=rewrites,
    )


def _mount(ref: str | None, **extra: Any) -> SessionMount:
    return SessionMount.model_validate(
        {
            "repository": "acme/widgets",
            "url": "https://github.com/acme/widgets.git",
            "mountPath": "/workspace/widgets",
            "ref": ref,
            "depth": 1,
            "auth": "none",
            **extra,
        }
    )


def test_staging_again_reuses_the_checkout_and_leaves_exactly_the_ref(
    shared_dir: Path, origin: Origin, log_file: BinaryIO
) -> None:
    workspace = shared_dir / "ws"
    staging = _staging(workspace, origin.rewrite, log_file)
    stage_mounts(staging, [_mount("main")], None)
    checkout = workspace / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.main
    assert git(checkout, "config", "remote.origin.url") == "https://github.com/acme/widgets.git"
    assert git(checkout, "rev-parse", "--is-shallow-repository") == "true"
    assert git(checkout, "tag") == ""
    marker = checkout / ".git" / "reused"
    marker.write_text("same repository\n")
    (checkout / "README.md").write_text("edited\n")
    (checkout / "untracked.txt").write_text("x\n")
    (checkout / "build").mkdir()
    (checkout / "build" / "ignored.o").write_text("x\n")
    hand_over(checkout)  # as the session's own commands would have left them
    stage_mounts(staging, [_mount(f"refs/pull/{PR_NUMBER}/head")], None)
    assert marker.exists()
    assert git(checkout, "rev-parse", "HEAD") == origin.pr_head
    detached = subprocess.run(
        ["git", "-c", "safe.directory=*", "symbolic-ref", "-q", "HEAD"], cwd=checkout
    )
    assert detached.returncode == 1
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    assert (checkout / "README.md").read_text() == "widgets\n"
    assert not (checkout / "untracked.txt").exists()
    assert not (checkout / "build").exists()


def test_a_mount_inside_another_survives_the_outer_clean(
    shared_dir: Path, origin: Origin, log_file: BinaryIO
) -> None:
    outer = _mount("main", mountPath="/workspace")
    inner = _mount(f"refs/pull/{PR_NUMBER}/head", mountPath="/workspace/pr")
    staging = _staging(shared_dir / "ws", origin.rewrite, log_file)
    stage_mounts(staging, [outer, inner], None)
    stage_mounts(staging, [outer, inner], None)  # a second start: both reused
    root = shared_dir / "ws" / "workspace"
    assert git(root, "rev-parse", "HEAD") == origin.main
    assert git(root / "pr", "rev-parse", "HEAD") == origin.pr_head
    assert (root / "pr" / "widget.py").exists()


def test_without_a_ref_the_fetch_has_no_refspec(
    shared_dir: Path, origin: Origin, log_file: BinaryIO
) -> None:
    notes: list[str] = []
    staging = _staging(shared_dir / "ws", origin.rewrite, log_file, notes=notes)
    stage_mounts(staging, [_mount(None)], None)
    checkout = shared_dir / "ws" / "workspace" / "widgets"
    assert git(checkout, "rev-parse", "HEAD") == origin.main  # the remote's HEAD
    assert "fatal" not in (shared_dir / "log").read_text()
    assert "/workspace/widgets: git fetch --depth 1 --no-tags origin" in notes


def _commit(checkout: Path) -> None:
    (checkout / "change.txt").write_text("change\n")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(checkout),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    for args in (["add", "change.txt"], ["commit", "-q", "-m", "A change"]):
        subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=checkout, env=env, check=True)


def test_commit_identity_splits_author_and_committer_with_a_trailer(
    shared_dir: Path, origin: Origin, log_file: BinaryIO
) -> None:
    author = {"name": "Staff Engineer (auto)", "email": "staff@agents.acme.dev"}
    staging = _staging(shared_dir / "ws", origin.rewrite, log_file)
    mount = _mount("main", commitAuthor=author)
    stage_mounts(staging, [mount], Requester(login="octocat", id=583231))
    checkout = shared_dir / "ws" / "workspace" / "widgets"
    _commit(checkout)
    line = git(checkout, "log", "-1", "--format=%an <%ae>|%cn <%ce>")
    assert line == (
        "octocat <583231+octocat@users.noreply.github.com>|"
        "Staff Engineer (auto) <staff@agents.acme.dev>"
    )
    trailers = git(checkout, "log", "-1", "--format=%(trailers)")
    assert trailers == "Co-Authored-By: Staff Engineer (auto) <staff@agents.acme.dev>"

    # a manual start's bare login ($USER) is no GitHub identity: commitAuthor is author and
    # committer again, and no hook stays
    staging = _staging(shared_dir / "ws", origin.rewrite, log_file)
    stage_mounts(staging, [mount], Requester(login="root", id=None))
    _commit(checkout)
    line = git(checkout, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%(trailers)")
    assert line == (
        "Staff Engineer (auto) <staff@agents.acme.dev>|"
        "Staff Engineer (auto) <staff@agents.acme.dev>|"
    )


class _Refusing(BaseHTTPRequestHandler):
    """A git host that refuses every request for want of credentials."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def refusing_host() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _files_holding(root: Path, text: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text in p.read_bytes()]


# What staging does for a githubApp mount on its own: the helper configured per checkout, the
# preflight failing `git_auth_failed` before any fetch, no broker → `git_auth_failed`, no
# credential on disk. test_github_app.py beside this file stages one end to end through the broker.
def test_the_auth_preflight_fails_git_auth_failed_before_any_fetch(
    shared_dir: Path, log_file: BinaryIO
) -> None:
    broker = {"url": "http://127.0.0.1:9/", "credential": CREDENTIAL}
    mount = _mount(
        "main",
        auth="githubApp",
        gitPermissions={"contents": "read", "metadata": "read"},
        commitAuthor={"name": "Bot", "email": "bot@example.com"},
    )
    with refusing_host() as host:
        workspace = shared_dir / "ws"
        staging = _staging(workspace, f"https://github.com/={host}", log_file, broker)
        with pytest.raises(SessionFailed) as failed:
            stage_mounts(staging, [mount], None)
    assert failed.value.code == "git_auth_failed"
    assert "could not authenticate" in failed.value.message
    assert "/workspace/widgets" in failed.value.message
    checkout = workspace / "workspace" / "widgets"
    config = (checkout / ".git" / "config").read_text()
    # the helper names its mount: one repository mounted twice gets two credentials
    assert (
        "helper = /nonexistent/git-credential-hookspawn --mount-path=/workspace/widgets\n"
    ) in config
    assert "useHttpPath = true" in config
    assert not (checkout / ".git" / "FETCH_HEAD").exists()
    assert _files_holding(workspace, CREDENTIAL.encode()) == []


def test_a_github_app_mount_without_a_broker_fails_git_auth_failed(
    shared_dir: Path, origin: Origin, log_file: BinaryIO
) -> None:
    mount = _mount("main", auth="githubApp", gitPermissions={"contents": "read"})
    staging = _staging(shared_dir / "ws", origin.rewrite, log_file)
    with pytest.raises(SessionFailed) as failed:
        stage_mounts(staging, [mount], None)
    assert failed.value.code == "git_auth_failed"
    assert "credential broker" in failed.value.message


def test_paths_map_under_the_session_root(tmp_path: Path) -> None:
    assert host_path(tmp_path, "/workspace/widgets") == tmp_path / "workspace" / "widgets"
    assert host_path(tmp_path, "/home/user") == tmp_path / "home" / "user"
    assert host_path(tmp_path, "/") == tmp_path
    assert host_path(tmp_path, "/a/../../etc") == tmp_path / "etc"


def test_local_sources_are_the_only_safe_directories() -> None:
    rewrites = [
        ("https://github.com/", "file:///srv/git/"),
        ("https://github.com/x/", "https://h/"),
    ]
    assert rewritten("https://github.com/x/y.git", rewrites) == "https://h/y.git"
    assert rewritten("https://github.com/a/b.git", rewrites) == "file:///srv/git/a/b.git"
    assert rewritten("git@example.com:a/b.git", rewrites) == "git@example.com:a/b.git"
    config = git_config_for(
        ["https://github.com/a/b.git", "https://github.com/x/y.git", "git@e:c.git"], rewrites
    )
    assert config == "[safe]\n\tdirectory = /srv/git/a/b.git\n"
    assert git_config_for(["https://github.com/x/y.git"], rewrites) == ""


def test_rewrites_are_from_to_pairs() -> None:
    assert parse_rewrites(["https://github.com/=file:///srv/git/"]) == [
        ("https://github.com/", "file:///srv/git/")
    ]
    with pytest.raises(ValueError, match="'nope' is not FROM=TO"):
        parse_rewrites(["nope"])


def _closed_port() -> int:
    from hookspawn.serve.redis_server import free_port

    return free_port()


@pytest.mark.parametrize("auth", ["none", "githubApp"])
def test_a_git_host_that_cannot_be_reached_fails_network_unreachable(
    shared_dir: Path, log_file: BinaryIO, auth: str
) -> None:
    """The preflight (githubApp) or the fetch (any mount) meets a port nothing listens on:
    `network_unreachable` naming the host and port, not a refused credential."""
    port = _closed_port()
    extra: dict[str, Any] = (
        {"auth": "githubApp", "gitPermissions": {"contents": "read", "metadata": "read"}}
        if auth == "githubApp"
        else {}
    )
    broker = {"url": "http://127.0.0.1:9/", "credential": CREDENTIAL}
    staging = _staging(
        shared_dir / "ws", f"https://github.com/=http://127.0.0.1:{port}/", log_file, broker
    )
    with pytest.raises(SessionFailed) as failed:
        stage_mounts(staging, [_mount("main", **extra)], None)
    assert failed.value.code == "network_unreachable"
    message = failed.value.message
    assert f"cannot reach 127.0.0.1:{port}" in message
    assert "the connection was refused" in message
    assert "/workspace/widgets" in message and "HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS" in message


def test_git_words_for_an_unreachable_host_are_told_from_a_refused_credential() -> None:
    from workers.session.runner.network import Destination, destination_of, unreachable

    said = {
        "fatal: unable to access 'https://git.example/a.git/': Could not resolve host: "
        "git.example": "the name does not resolve",
        "fatal: unable to access 'https://git.example/a.git/': CONNECT tunnel failed, "
        "response 502": "the sandbox's proxy could not connect to it (HTTP 502)",
        "fatal: unable to access 'https://git.example/a.git/': CONNECT tunnel failed, "
        "response 403": "the sandbox's proxy refused it (HTTP 403)",
        "fatal: unable to access 'http://127.0.0.1:1/a/': Failed to connect to 127.0.0.1 "
        "port 1 after 0 ms: Connection refused": "the connection was refused",
        "ssh: connect to host git.example port 22: Connection timed out": (
            "the connection could not be made"
        ),
    }
    for output, reason in said.items():
        assert unreachable(output) == reason, output
    for refused in (
        "remote: Invalid username or password.\nfatal: Authentication failed for 'https://x/'",
        "fatal: unable to access 'http://x/': The requested URL returned error: 403",
        "",
    ):
        assert unreachable(refused) is None
    assert destination_of("https://github.com/acme/w.git") == Destination("github.com", 443)
    assert destination_of("http://127.0.0.1:8123/a") == Destination("127.0.0.1", 8123)
    assert destination_of("git@github.com:acme/w.git") == Destination("github.com", 22)
    assert destination_of("ssh://git@[::1]:2222/x") == Destination("::1", 2222)
    assert str(Destination("::1", 2222)) == "[::1]:2222"
    assert destination_of("file:///srv/git/a.git") is None
    assert destination_of("/srv/git/a.git") is None
