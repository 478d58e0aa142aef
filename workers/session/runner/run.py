"""Runs one session on this machine: staging → setup (snapshot cache) → harness → its end."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from agents.environment_spec import EnvironmentSpec
from agents.sandbox.config import SandboxConfig
from triggers.session.env import MissingSecret, resolve_env
from triggers.session.harness import PROGRAMS
from triggers.session.spec import SessionSpec
from workers import metrics
from workers.errors import SessionFailed, SessionRecordInvalid
from workers.session.records import SessionStore
from workers.session.runner import setup_steps
from workers.session.runner.command import CommandCancelled, CommandTimedOut, account_of
from workers.session.runner.harness_phase import HarnessPhase
from workers.session.runner.lease import Heartbeat
from workers.session.runner.limits import RunnerLimits
from workers.session.runner.log_writer import SessionLog
from workers.session.runner.logs import log_path
from workers.session.runner.mcp_config import mcp_env
from workers.session.runner.roots import scratch_parent, workspaces_root
from workers.session.runner.sandbox import (
    SandboxUnavailable,
    confine,
)
from workers.session.runner.sandbox_paths import (
    HOME,
    SYSTEM,
    SandboxPaths,
    open_sandbox_paths,
    plan,
)
from workers.session.runner.secret_store import load_secrets
from workers.session.runner.session_git import (
    admin_destinations,
    helper_problem,
    place_helper,
    sandbox_git,
    session_destinations,
    session_git_env,
    session_reads,
    tools_on_path,
)
from workers.session.runner.session_run import GIT_TIMEOUT, SessionRun
from workers.session.runner.setup_snapshot import SetupSnapshot
from workers.session.runner.snapshots import SnapshotCache
from workers.session.runner.staging import (
    BrokerLink,
    Staging,
    git_config_for,
    host_path,
    make_dirs,
    parse_rewrites,
    stage_mounts,
)
from workers.session.runner.stopping import RunnerStop
from workers.session.runs import SessionRuns
from workers.session.status import SessionStatus
from workers.settings import Settings

__all__ = ["SessionRunner"]

log = logging.getLogger(__name__)

#: programs a confined command starts through (srt and what it runs, the harnesses): a bind
#: never hides them
_SANDBOX_PROGRAMS = (
    *("srt", "node", "bwrap", "socat", "rg", "git", "sh", "env", "python3"),
    *PROGRAMS.values(),  # the harnesses'
)


class SessionRunner:
    """Takes queued sessions (one `run` per Celery task) and runs them to their end."""

    def __init__(
        self,
        settings: Settings,
        client: redis.Redis,
        owner: str,
        *,
        sandbox: SandboxConfig | SandboxUnavailable,
        issue_credential: Callable[[str], str | None] | None = None,
        end_credential: Callable[[str], None] | None = None,
    ) -> None:
        """`sandbox`: what confines setup and harness commands, as opened at the runner's
        start, or why it could not be opened (every session is then refused).
        `issue_credential(session_id)`: a fresh session credential for the broker (the
        broker's SessionCredentials.issue), None for a session ended before it ran; without
        one a githubApp mount whose spec carries no credential fails its auth preflight.
        `end_credential(session_id)`: ends the session at its broker as the run ends, before
        its terminal status is written (which revokes its credentials anyway)."""
        self.settings = settings
        self.sandbox = sandbox
        self.issue_credential = issue_credential
        self.end_credential = end_credential
        self.owner = owner
        self.sessions = SessionStore(client)
        self.runs = SessionRuns(client, credential_ttl=settings.session_credential_ttl)
        self.account = account_of(settings.runner_user)
        self.workspaces = workspaces_root(settings)
        self.scratch = scratch_parent(self.account, self.workspaces)
        self.rewrites = parse_rewrites(settings.git_url_rewrite)
        self.snapshots = SnapshotCache(
            settings.data_dir / "snapshots",
            save_limit=settings.snapshot_bytes,
            restore_limit=settings.session_disk_limit,
        )
        self.limits = RunnerLimits(settings)
        #: why sessions' commands see host paths rather than their sandbox paths (None: they
        #: get their own; found once, at the start)
        self.paths_problem = open_sandbox_paths()
        #: a credential helper to configure instead of the standalone one each session gets
        #: beside its root (`place_helper`); None: that one
        self.helper: str | None = None
        self.stop = RunnerStop(settings.runner_stop_grace.total_seconds())  # on SIGTERM
        self.harnesses = HarnessPhase(settings, self.runs, owner, self.account)

    def run(self, session_id: str) -> str:
        """Run the session when it is queued; what became of it."""
        lease = self.settings.runner_lease_seconds  # a stopping runner leaves it queued
        workspace = str(self.workspaces / session_id)
        if self.stop.stopping.is_set() or not self.runs.claim(
            session_id, self.owner, lease, workspace=workspace
        ):
            return "not queued"
        try:
            found, gone = self.sessions.get(session_id), "the session record is gone"
        except SessionRecordInvalid as exc:
            found, gone = None, exc.message
        path = log_path(self.settings.data_dir, session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with (
            SessionLog(path, self.settings.session_log_limit) as log_file,
            Heartbeat(self.runs, session_id, self.owner, lease) as beat,
            self.stop.holding(session_id, beat),
        ):
            if found is None:
                return self._end(session_id, SessionStatus.FAILED, "internal_error", gone)
            run = SessionRun(self, found.spec, log_file, beat, created_at=found.created_at)
            # how the session ended; recorded once its files are cleaned up (the MCP config
            # holding its credential among them), so an ended session has none left
            ended: tuple[SessionStatus, str | None, str]
            try:
                with self.stop.ending(session_id):  # what a stop interrupts: runner_stopped
                    self._run(run)
            except SessionFailed as exc:
                run.note(f"failed: {exc.code}: {exc.message}")
                ended = (SessionStatus.FAILED, exc.code, exc.message)
            except CommandCancelled:
                run.note("cancelled")
                ended = (SessionStatus.CANCELLED, None, "")
            except Exception as exc:
                log.exception("session %s: runner error", session_id)
                run.note(f"runner error: {type(exc).__name__}: {exc}")
                ended = (SessionStatus.FAILED, "internal_error", f"{type(exc).__name__}: {exc}")
            else:
                run.note("succeeded")
                ended = (SessionStatus.SUCCEEDED, None, "")
            finally:
                run.close()
            return self._end(session_id, *ended)

    def _end(
        self, session_id: str, status: SessionStatus, code: str | None = None, message: str = ""
    ) -> str:
        failure = {"code": code, "message": message} if code else None
        if self.end_credential is not None:
            self.end_credential(session_id)
        if self.runs.advance(session_id, self.owner, status, failure):
            metrics.inc(metrics.SESSIONS_ENDED, status, code or "")
            self._flush_metrics()
        return status

    def _flush_metrics(self) -> None:
        # the runner records a few series per session: flushed as they happen, no thread
        with contextlib.suppress(redis.RedisError):
            metrics.flush(self.runs.client)

    def confine(
        self, argv: Sequence[str], workspace: Path, env: dict[str, str], **more: Any
    ) -> tuple[list[str], dict[str, str]]:
        """`argv` and `env` wrapped by the sandbox, reaching the domains
        HOOKSPAWN_SANDBOX_ALLOWED_DOMAINS lists (`more`: `confine`'s `scratch`, and the
        session's own `destinations` and `read`); a session fails rather than run unconfined."""
        if isinstance(self.sandbox, SandboxUnavailable):
            raise SessionFailed(self.sandbox.refusal(), code="sandbox_unavailable")
        try:
            return confine(
                argv,
                workspace=workspace,
                config=self.sandbox,
                env=env,
                allowed_domains=self.settings.sandbox_allowed_domains,
                denied_domains=admin_destinations(self.settings.public_url, self.settings.url),
                **more,
            )
        except SandboxUnavailable as exc:
            raise SessionFailed(exc.refusal(), code="sandbox_unavailable") from None

    def _run(self, run: SessionRun) -> None:
        if isinstance(self.sandbox, SandboxUnavailable):
            raise SessionFailed(self.sandbox.refusal(), code="sandbox_unavailable")
        session = run.session
        environment = session.environment.spec
        try:
            env = resolve_env(
                [environment.env, session.env], load_secrets(self.settings.secrets_file)
            )
        except MissingSecret as exc:
            raise SessionFailed(exc.message, code="secret_missing") from None
        make_dirs(run.workspace, run.home, self.account)
        mounts = session.mounts
        run.git_config.write_text(git_config_for([m.url for m in mounts], self.rewrites))
        run.git_config.chmod(0o644)
        run.note(f"staging {len(mounts)} mount(s) in {run.workspace}")
        broker, helper = self._broker(session), self.helper or str(place_helper(run.tools))
        run.paths = self._sandbox_paths(run, Path(helper).parent)
        run.reach["read"] = session_reads(run.tools, mounts, self.rewrites)
        run.helper_dir = Path(helper).parent
        run.reach["destinations"] = session_destinations(broker, mounts, self.rewrites)
        path = env.get("PATH", run.base_env["PATH"])
        env = {**env, **session_git_env(broker, Path(helper), path)}
        staging = Staging(
            workspace=run.workspace,
            git=run.git,
            note=run.note,
            account=self.account,
            helper=helper,
            broker=broker,
            helper_problem=lambda: helper_problem(
                helper, self.account, cwd=run.workspace, env=run.base_env, log=run.log
            ),
            rewrites=self.rewrites,
            preflight_git=sandbox_git(run.command, env, GIT_TIMEOUT),
            output=run.log.recent_output,
            forget_output=run.log.forget_output,
        )
        stage_mounts(staging, mounts, session.requester)
        env = {**env, **mcp_env(run.workspace, staging.broker, self.account)}
        self._advance(run, SessionStatus.SETUP)
        working = session.working_directory
        cwd = host_path(run.workspace, working) if working else run.workspace
        if working:
            make_dirs(run.workspace, cwd, self.account)
            self._setup(run, environment, cwd, env)
        else:
            run.note("no working directory: setup skipped")
        self._advance(run, SessionStatus.RUNNING)
        self.harnesses.run(run, cwd, env)

    def _sandbox_paths(self, run: SessionRun, helper_dir: Path) -> SandboxPaths | None:
        """The session's directories at their sandbox paths (its mountPaths, the home, its
        working directory), their mount points made on the host; None, said in its log, where
        its commands see host paths instead."""
        if self.paths_problem is not None:
            run.note(f"sandbox paths are host paths: {self.paths_problem}")
            return None
        session = run.session
        targets = [m.mount_path for m in session.mounts] + [HOME]
        working = session.working_directory
        if working:
            targets.append(working)
        keep: list[Path | str] = [run.workspace, run.tools, helper_dir, *SYSTEM]
        keep.append(self.scratch or tempfile.gettempdir())
        if not isinstance(self.sandbox, SandboxUnavailable):
            keep += [m.source for m in self.sandbox.mounts]
        for program in _SANDBOX_PROGRAMS:
            found = shutil.which(program)
            if found is not None:
                keep += [os.path.dirname(found), os.path.dirname(os.path.realpath(found))]
        try:
            paths = SandboxPaths(plan(run.workspace, targets, keep))
        except ValueError as exc:
            run.note(f"sandbox paths are host paths for this session: {exc}")
            return None
        for bind in paths.binds:  # staging would make them; the auth preflight binds them
            make_dirs(run.workspace, bind.source, self.account)
        why = paths.prepare()
        if why is not None:
            run.note(f"sandbox paths are host paths for this session: {why}")
            return None
        run.note(f"sandbox paths: {', '.join(paths.targets)} (the session's own)")
        return paths

    def _broker(self, session: SessionSpec) -> BrokerLink | None:
        """The spec's `broker`, with a session credential: a stored spec carries only the
        broker's url, so one is issued for this start (kept in memory, handed to git's
        environment only)."""
        if session.broker is None:
            return None
        url, credential = session.broker.url, session.broker.credential
        if not credential and self.issue_credential is not None:
            credential = self.issue_credential(session.id)
            return BrokerLink(url, credential, ended=credential is None)
        return BrokerLink(url, credential)

    def _advance(self, run: SessionRun, status: SessionStatus) -> None:
        if run.beat.stop_asked.is_set():
            raise CommandCancelled(status)
        run.note(status)
        self.runs.advance(run.session.id, self.owner, status)
        run.limits.phase(status)
        if status == SessionStatus.RUNNING:
            waited = time.time() - run.created_at.timestamp()
            metrics.observe(metrics.SESSION_START_SECONDS, waited)
            self._flush_metrics()

    def _setup(
        self, run: SessionRun, environment: EnvironmentSpec, cwd: Path, env: dict[str, str]
    ) -> None:
        entries = environment.setup
        snapshot = SetupSnapshot(
            self.snapshots,
            self.runs,
            self.owner,
            run.session,
            environment,
            workspace=run.workspace,
            home=run.home,
            cwd=cwd,
            account=self.account,
            note=run.note,
        )
        if entries:
            snapshot.restore()
        for entry in entries:
            script = tools_on_path(run.helper_dir) + setup_steps.script(entry.commands, run.home)
            run.note(f"setup {entry.name}")
            try:
                code = run.command(
                    ["/bin/sh", "-lc", script],
                    cwd,
                    env,
                    timeout=self.settings.setup_timeout,
                    confined=True,
                )
            except CommandTimedOut:
                raise SessionFailed(
                    f"setup entry {entry.name!r} ran longer than "
                    f"{self.settings.setup_timeout:g}s and was stopped",
                    code="setup_timeout",
                ) from None
            failed = setup_steps.failed_command(entry.commands, run.home)
            if code != 0:
                at = f" at `{failed}`" if failed else ""
                message = f"setup entry {entry.name!r} exited with status {code}{at}"
                raise SessionFailed(message, code="setup_failed")
        if entries:
            # past the disk limit nothing is saved: the session fails disk_limit_exceeded
            run.limits.check_disk()
            snapshot.save()
