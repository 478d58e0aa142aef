"""Staging a session's mounts with the real git, as the mounts seed's "Checkout behavior" says."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from triggers.session.spec import CommitAuthor, Requester, SessionMount
from triggers.session.url_rewrite import Rewrite, parse_rewrites, rewritten
from workers.errors import SessionFailed
from workers.session.runner.command import Account, runner_account
from workers.session.runner.network import (
    Destination,
    destination_of,
    unreachable,
    unreachable_message,
)
from workers.session.runner.network import probe as probe_port

__all__ = [
    "GitRunner",
    "Staging",
    "attributable",
    "git_config_for",
    "host_path",
    "inside",
    "make_dirs",
    "parse_rewrites",
    "rewritten",
    "stage_mounts",
]

#: run one git command (argv after `git`) in a directory with extra environment; exit status
GitRunner = Callable[[Sequence[str], Path, Mapping[str, str]], int]


def git_config_for(urls: Sequence[str], rewrites: Sequence[Rewrite]) -> str:
    """The global git config staging's commands get: git refuses to read a repository another
    account owns, so each local (`file://`) repository a mount fetches from, after rewriting,
    is named a safe directory, and nothing else is."""
    lines = []
    for url in urls:
        target = rewritten(url, rewrites)
        if target.startswith("file://"):
            lines.append(f"\tdirectory = {target[len('file://') :]}\n")
    return "[safe]\n" + "".join(lines) if lines else ""


def host_path(workspace: Path, sandbox_path: str) -> Path:
    """Where an absolute sandbox path (a mountPath, `/home/user`) lands under the session root;
    raises ValueError for a path that would leave it."""
    relative = os.path.normpath(sandbox_path).lstrip("/")
    target = (workspace / relative) if relative not in ("", ".") else workspace
    if ".." in Path(relative).parts:
        raise ValueError(f"path {sandbox_path!r} leaves the session root")
    return target


def inside(workspace: Path, path: Path) -> bool:
    """Whether `path`, symbolic links resolved, stays under the session root: files the
    runner writes or copies as root never follow a link a session command left."""
    root = workspace.resolve()
    resolved = path.resolve()
    return resolved == root or root in resolved.parents


def make_dirs(workspace: Path, target: Path, account: Account | None) -> None:
    """`target` and its parents up to `workspace`, owned by `account` when there is one."""
    if not inside(workspace, target):
        raise ValueError(f"{target} leaves the session root {workspace} through a link")
    target.mkdir(parents=True, exist_ok=True)
    if account is None:
        return
    path = target
    while True:
        os.chown(path, account.uid, account.gid)
        if path == workspace or workspace not in path.parents:
            break
        path = path.parent


@dataclass(frozen=True)
class BrokerLink:
    """How git reaches the credential broker for one start: the spec's `broker.url` and the
    session credential issued for it (None: none was; `ended`: the session was ended first)."""

    url: str
    credential: str | None = None
    ended: bool = False


@dataclass
class Staging:
    """What staging needs: where the session root is, how to run git, how to log."""

    workspace: Path
    git: GitRunner
    note: Callable[[str], None]
    account: Account | None
    #: the credential helper's path (git-credential-hookspawn) for githubApp mounts
    helper: str
    #: how git reaches the credential broker; None when the session has no broker
    broker: BrokerLink | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: why the session's account cannot run `helper`, or None when it can
    helper_problem: Callable[[], str | None] = lambda: None
    #: HOOKSPAWN_GIT_URL_REWRITE, written into each checkout for the agent's own git
    rewrites: Sequence[Rewrite] = ()
    #: how the auth preflight runs git: inside the sandbox, as the harness would (None: as
    #: staging's other git commands)
    preflight_git: GitRunner | None = None
    #: what the commands printed since `forget_output` was last called (the log's recent
    #: output), read when git fails to tell an unreachable host from a refused credential
    output: Callable[[], str] = lambda: ""
    forget_output: Callable[[], None] = lambda: None
    #: the runner's own try at a host's port: why it cannot connect, or None
    probe: Callable[[Destination], str | None] = probe_port


def _unreachable(staging: Staging, mount: SessionMount) -> SessionFailed | None:
    """`network_unreachable` when git's output (or, where it says nothing of the network, the
    runner's own try at the host) shows the mount's git host could not be reached."""
    url = rewritten(mount.url, staging.rewrites)
    where = destination_of(url)
    why = unreachable(staging.output())
    if why is None and where is not None:
        why = staging.probe(where)
    if why is None:
        return None
    return SessionFailed(
        unreachable_message(mount.mount_path, url, where, why), code="network_unreachable"
    )


def _mount_env(staging: Staging) -> dict[str, str]:
    """What git's environment gets for a githubApp mount: the broker's address and the session
    credential, for the credential helper only; never written to disk."""
    if not staging.broker:
        return {}
    return {
        "HOOKSPAWN_BROKER_URL": staging.broker.url,
        "HOOKSPAWN_SESSION_CREDENTIAL": staging.broker.credential or "",
    }


def attributable(requester: Requester | None) -> bool:
    """A requester the commits can be attributed to on GitHub: a login with its user id (a
    webhook's human sender). A manual start's bare login (the caller's $USER) is not one."""
    return bool(requester and requester.login and requester.id is not None)


def _identity(mount: SessionMount, requester: Requester | None) -> list[list[str]]:
    """`git config` commands for the checkout's identity: commitAuthor as user.name/user.email
    (the committer); a human requester, when there is one, as author.name/author.email."""
    author = mount.commit_author
    if not author:
        return []
    commands = [
        ["config", "--local", "user.name", author.name],
        ["config", "--local", "user.email", author.email],
    ]
    if attributable(requester):
        assert requester is not None
        login, user_id = requester.login, requester.id
        email = f"{user_id}+{login}@users.noreply.github.com"
        commands += [
            ["config", "--local", "author.name", login],
            ["config", "--local", "author.email", email],
        ]
    return commands


def _trailer_hook(author: CommitAuthor) -> str:
    trailer = f"Co-Authored-By: {author.name} <{author.email}>"
    return (
        "#!/bin/sh\n"
        "# installed by hookspawn: credits the agent that wrote the change\n"
        "git interpret-trailers --in-place --if-exists addIfDifferent "
        f'--trailer {shlex.quote(trailer)} "$1"\n'
    )


def _prepare(staging: Staging, mount: SessionMount, requester: Requester | None) -> Path:
    """Init (or reuse) the checkout, point origin at the mount's url, set identity and auth."""
    path = host_path(staging.workspace, mount.mount_path)
    make_dirs(staging.workspace, path, staging.account)
    if not (path / ".git").is_dir():
        staging.git(["init", "-q", "."], path, {})
    commands = [["config", "--local", "remote.origin.url", mount.url]]
    # the agent's git fetches and pushes where staging fetched from
    commands += [
        ["config", "--local", "--replace-all", f"url.{target}.insteadOf", source]
        for source, target in staging.rewrites
    ]
    commands += _identity(mount, requester)
    if mount.auth == "githubApp" and mount.git_permissions is not None:
        commands += [
            ["config", "--local", "--replace-all", "credential.helper", ""],
            # the helper names its mount: one repository mounted twice, two credentials
            ["config", "--local", "--add", "credential.helper", _helper_for(staging, mount)],
            ["config", "--local", "credential.useHttpPath", "true"],
        ]
    if not attributable(requester):
        for key in ("author.name", "author.email"):  # from an earlier start; may be absent
            staging.git(["config", "--local", "--unset-all", key], path, {})
    for command in commands:
        if staging.git(command, path, {}) != 0:
            raise SessionFailed(
                f"mount {mount.mount_path}: `git {shlex.join(command[:3])}` failed (see the log)",
                code="fetch_failed",
            )
    _install_hook(staging, path, mount.commit_author, requester)
    return path


def _helper_for(staging: Staging, mount: SessionMount) -> str:
    """The helper as git runs it (through the shell, the operation appended) for `mount`."""
    return f"{staging.helper} {shlex.quote('--mount-path=' + mount.mount_path)}"


def _install_hook(
    staging: Staging, path: Path, author: CommitAuthor | None, requester: Requester | None
) -> None:
    """The prepare-commit-msg hook when a human requester splits the identity; else none."""
    hook = path / ".git" / "hooks" / "prepare-commit-msg"
    make_dirs(staging.workspace, hook.parent, staging.account)
    hook.unlink(missing_ok=True)  # a link there is removed, never written through
    if not (author and attributable(requester)):
        return
    fd = os.open(hook, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    with os.fdopen(fd, "w") as handle:
        handle.write(_trailer_hook(author))
    if staging.account:
        os.chown(hook, staging.account.uid, staging.account.gid)


def _preflight(staging: Staging, mount: SessionMount, path: Path) -> None:
    where = f"mount {mount.mount_path} ({mount.repository})"
    broker = staging.broker or BrokerLink(url="")
    if mount.git_permissions is not None and not (broker.url and broker.credential):
        if broker.ended:
            lacking = "was ended (POST /sessions/{id}/end) before it ran: it gets no credential"
        elif broker.url:
            lacking = "has no session credential for it"
        else:
            lacking = "has no `broker` in its spec"
        raise SessionFailed(
            f"{where}: githubApp auth needs the credential broker, and this session {lacking}",
            code="git_auth_failed",
        )
    staging.note(f"auth preflight: git ls-remote origin for {mount.mount_path}")
    staging.forget_output()
    code = (staging.preflight_git or staging.git)(
        ["ls-remote", "origin", "HEAD"], path, _mount_env(staging)
    )
    if code == 0:
        return
    network = _unreachable(staging, mount)
    if network is not None:
        raise network
    # git says only that it could not authenticate: name the helper when it could not run
    problem = staging.helper_problem()
    if problem:
        raise SessionFailed(
            f"{where}: {runner_account(staging.account)} cannot run the git credential helper "
            f"{staging.helper} ({problem}); set HOOKSPAWN_RUNNER_USER to an account that can "
            "run it and the system's python3 it starts",
            code="git_auth_failed",
        )
    raise SessionFailed(
        f"{where}: git could not authenticate to {mount.url} (git ls-remote exited with "
        f"status {code}); check that the GitHub App installation covers {mount.repository}"
        " and that the credential broker is reachable",
        code="git_auth_failed",
    )


def _fetch(staging: Staging, mount: SessionMount, path: Path, nested: Sequence[Path]) -> None:
    """Fetch, check out, reset and clean; `nested`: other mounts' checkouts inside this one,
    which its clean leaves alone."""
    ref = mount.ref
    env = _mount_env(staging) if mount.auth == "githubApp" else {}
    fetch = ["fetch", "--depth", str(mount.depth or 1), "--no-tags", "origin"]
    if ref:
        fetch.append(ref)
    steps = [
        fetch,
        ["checkout", "-q", "--force", "--detach", "FETCH_HEAD"],
        ["reset", "-q", "--hard"],
        ["clean", "-ffdxq", *(f"--exclude=/{inner.relative_to(path)}" for inner in nested)],
    ]
    for command in steps:
        staging.note(f"{mount.mount_path}: git {shlex.join(command)}")
        staging.forget_output()
        code = staging.git(command, path, env)
        if code != 0 and command is fetch:
            network = _unreachable(staging, mount)
            if network is not None:
                raise network
        if code != 0:
            what = f"fetch of {ref}" if ref and command is fetch else f"git {command[0]}"
            raise SessionFailed(
                f"mount {mount.mount_path}: {what} from {mount.url} exited with status "
                f"{code} (see the session log)",
                code="fetch_failed",
            )


def stage_mounts(
    staging: Staging, mounts: Sequence[SessionMount], requester: Requester | None
) -> None:
    """Stage every mount: prepare each, the auth preflight of the githubApp ones before any
    fetch, then fetch, check out FETCH_HEAD, hard-reset and clean each. Raises SessionFailed."""
    paths = [_prepare(staging, mount, requester) for mount in mounts]
    for mount, path in zip(mounts, paths, strict=True):
        if mount.auth == "githubApp":
            _preflight(staging, mount, path)
    for mount, path in zip(mounts, paths, strict=True):
        _fetch(staging, mount, path, [p for p in paths if path in p.parents])
