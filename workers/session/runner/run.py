"""Runs one session on this machine: staging → setup (snapshot cache) → harness → its end."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import redis

from agents.environment_spec import EnvironmentSpec
from agents.sandbox.config import SandboxConfig
from triggers.session.env import MissingSecret, resolve_env
from triggers.session.harness import (
    BASE_URL_SETTINGS,
    KEY_SETTINGS,
    PROGRAMS,
    HarnessInputs,
    HarnessRefused,
    Invocation,
    build_invocation,
    session_prompt,
)
from triggers.session.harness_events import EventReader
from triggers.session.spec import SessionSpec
from workers import metrics
from workers.errors import SessionFailed, SessionRecordInvalid
from workers.session.records import SessionStore
from workers.session.runner import setup_steps
from workers.session.runner.command import (
    CommandCancelled,
    CommandOutput,
    CommandTimedOut,
    account_of,
    run_command,
    runner_account,
)
from workers.session.runner.harness import (
    SESSION_PATH,
    HarnessOutput,
    HarnessProgram,
    Redacting,
    Transcript,
    harness_home,
    model_access,
    probe_harnesses,
    remove_harness_home,
    write_private,
)
from workers.session.runner.lease import Heartbeat
from workers.session.runner.limits import RunnerLimits
from workers.session.runner.log_writer import SessionLog
from workers.session.runner.logs import log_path, transcript_path
from workers.session.runner.mcp_config import mcp_env, remove_mcp_config
from workers.session.runner.roots import scratch_parent, workspaces_root
from workers.session.runner.sandbox import (
    SandboxUnavailable,
    confine,
    session_tmp,
    srt_scratch,
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

#: seconds one staging git command may take (a fetch of a large repository included)
GIT_TIMEOUT = 600
#: programs a confined command starts through (srt and what it runs, the harnesses): a bind
#: never hides them
_SANDBOX_PROGRAMS = (
    *("srt", "node", "bwrap", "socat", "rg", "git", "sh", "env", "python3"),
    *PROGRAMS.values(),  # the harnesses'
)


def _either(first: Callable[[], bool], second: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: first() or second()


class _Run:
    """One session's run: its files, log and how its commands are started."""

    def __init__(
        self,
        runner: SessionRunner,
        session: SessionSpec,
        log_file: SessionLog,
        beat: Heartbeat,
        *,
        created_at: datetime,
    ) -> None:
        self.runner, self.session, self.log, self.beat = runner, session, log_file, beat
        #: when the session was created (what its wait for a runner is measured from)
        self.created_at = created_at
        self.workspace = runner.workspaces / session.id
        self.home = host_path(self.workspace, HOME)
        self.limits = runner.limits.session(
            session, self.workspace, stop=beat.stop_asked.is_set, note=self.note
        )
        #: staging's global git config (beside the session root, outside it)
        self.git_config = runner.workspaces / f"{session.id}.gitconfig"
        #: srt's temporary directory (its proxy's sockets): made on first use, removed at the end
        self.scratch: Path | None = None
        #: the session's own tools (its credential helper) beside its root, and what it alone
        #: reaches from inside the sandbox (`confine`'s `destinations` and `read`)
        self.tools = runner.workspaces / f"{session.id}.tools"
        self.reach: dict[str, list[str]] = {}
        self.helper_dir: Path | None = None
        #: the session's directories at their sandbox paths (None: commands see host paths)
        self.paths: SandboxPaths | None = None
        self.base_env = {"PATH": SESSION_PATH, "HOME": str(self.home), "LANG": "C.UTF-8"}
        if runner.account:
            self.base_env["USER"] = runner.account.name

    def note(self, text: str) -> None:
        self.log.note(text)

    def command(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        *,
        timeout: float | None,
        confined: bool,
        stdin: bytes | None = None,
        output: CommandOutput | None = None,
        stdout: CommandOutput | None = None,
        destinations: Sequence[str] = (),
        stop: Callable[[], bool] | None = None,
    ) -> int:
        """Run one command of the session; `confined`: inside the sandbox (setup and harness;
        staging's git runs outside, as the sandbox keeps `.git/config` and hooks unwritable).
        The harness's own: `output` instead of the log, `stdout` read apart (its events),
        `destinations` it alone reaches besides the session's (its model endpoint), `stop`
        asked like a cancel (its key refused)."""
        if self.beat.stop_asked.is_set():
            raise CommandCancelled(argv[0])
        full_env = {**self.base_env, **env}
        parent_death = signal.SIGKILL
        enter = None
        if confined and self.paths is not None:
            full_env["HOME"] = HOME
            enter = self.paths.enter(self.paths.inside(cwd))
        if confined:
            if self.scratch is None:
                self.scratch = srt_scratch(self.runner.account, within=self.runner.scratch)
                make_dirs(self.workspace, session_tmp(self.workspace), self.runner.account)
            reach: dict[str, Sequence[str]] = dict(self.reach)
            if self.paths is not None:
                reach["session_paths"] = self.paths.targets
            if destinations:
                reach["destinations"] = [*reach.get("destinations", []), *destinations]
            wrapped, full_env = self.runner.confine(
                argv, self.workspace, full_env, scratch=self.scratch, **reach
            )
            if wrapped != list(argv):
                # srt passes SIGTERM on to its command; SIGKILL would leave that running
                parent_death = signal.SIGTERM
            argv = wrapped
        try:
            return run_command(
                argv,
                cwd=cwd,
                env=full_env,
                timeout=timeout,
                log=self.log if output is None else output,
                cancel=self.limits.cancel if stop is None else _either(self.limits.cancel, stop),
                account=self.runner.account,
                stdin=stdin,
                parent_death=parent_death,
                preexec=self.limits.preexec(confined),
                stdout=stdout,
                enter=enter,
            )
        except (PermissionError, FileNotFoundError) as exc:
            raise SessionFailed(
                f"{runner_account(self.runner.account)} cannot run {argv[0]!r} in {cwd}: "
                f"{exc.strerror} (every directory above the data directory must be traversable "
                "by HOOKSPAWN_RUNNER_USER, and the command must exist)",
                code="internal_error",
            ) from None
        except subprocess.SubprocessError:
            if enter is None:
                raise
            raise SessionFailed(
                f"{argv[0]!r} could not start in the session's own mount namespace (the log "
                "says why)",
                code="internal_error",
            ) from None
        finally:
            self.limits.ended()  # a session past its disk limit fails here

    def close(self) -> None:
        """Remove srt's temporary directory (srt leaves its sockets when it is killed) and the
        commands' TMPDIR."""
        self.limits.close()
        remove_harness_home(self.workspace)
        remove_mcp_config(self.workspace)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            shutil.rmtree(session_tmp(self.workspace), ignore_errors=True)

    def git(self, args: Sequence[str], cwd: Path, env: Mapping[str, str]) -> int:
        argv = ["git"]
        for source, target in self.runner.rewrites:
            argv += ["-c", f"url.{target}.insteadOf={source}"]
        git_env = {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(self.git_config),
            **env,
        }
        try:
            return self.command([*argv, *args], cwd, git_env, timeout=GIT_TIMEOUT, confined=False)
        except CommandTimedOut:
            raise SessionFailed(
                f"`git {args[0]}` in {cwd} ran longer than {GIT_TIMEOUT}s and was stopped",
                code="fetch_failed",
            ) from None


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
        self._harnesses: dict[str, HarnessProgram] | None = None
        self._harness_lock = threading.Lock()

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
            run = _Run(self, found.spec, log_file, beat, created_at=found.created_at)
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

    def _run(self, run: _Run) -> None:
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
        self._harness(run, cwd, env)

    def _sandbox_paths(self, run: _Run, helper_dir: Path) -> SandboxPaths | None:
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

    def _advance(self, run: _Run, status: SessionStatus) -> None:
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
        self, run: _Run, environment: EnvironmentSpec, cwd: Path, env: dict[str, str]
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

    def harness_programs(self) -> dict[str, HarnessProgram]:
        """Each harness this runner can start (or why not), its program found on the session
        PATH with its version: looked up once, when first asked (at the runner's start)."""
        with self._harness_lock:
            if self._harnesses is None:
                self._harnesses = probe_harnesses(self.settings, SESSION_PATH)
            return self._harnesses

    def _harness(self, run: _Run, cwd: Path, env: dict[str, str]) -> None:
        session = run.session
        harness_env = {
            **env,
            "HOOKSPAWN_SESSION_ID": session.id,
            "HOOKSPAWN_SESSION_TITLE": session.display_title or "",
            "HOOKSPAWN_SESSION_PROMPT": session.initial_prompt or "",
            "HOOKSPAWN_SESSION_MESSAGE": session.message or "",
        }
        if self.settings.harness_command:
            self._custom_harness(run, cwd, harness_env, self.settings.harness_command)
            return
        name = session.harness
        if name not in PROGRAMS:
            raise SessionFailed(
                f"harness {name!r} is not one hookspawn runs ({', '.join(PROGRAMS)}); set "
                "HOOKSPAWN_HARNESS_COMMAND to run another",
                code="harness_unavailable",
            )
        access = model_access(self.settings, name)
        if not access.key and self.settings.harness_without_key == "skip":
            why = f"{KEY_SETTINGS[name]} is unset, so the session ends after setup"
            run.note(f"harness {name} skipped: {why}")
            self.runs.note_harness(session.id, self.owner, harness={"name": name, "skipped": why})
            return
        path = env.get("PATH", SESSION_PATH)
        program = shutil.which(PROGRAMS[name], path=path)
        if program is None:
            raise SessionFailed(
                f"harness {name}: the program {PROGRAMS[name]!r} is not on the session PATH "
                f"({path}); scripts/setup installs it",
                code="harness_unavailable",
            )
        try:
            home = harness_home(run.workspace, self.account)
            invocation = build_invocation(
                HarnessInputs(
                    harness=name,
                    program=program,
                    prompt=session_prompt(session.initial_prompt, session.message),
                    system_prompt=session.system_prompt,
                    model=access,
                    mcp_url=env.get("HOOKSPAWN_MCP_URL"),
                    mcp_config=env.get("HOOKSPAWN_MCP_CONFIG"),
                    approval=session.environment.spec.approval,
                    config_home=str(home),
                    as_root=self.account is None and os.geteuid() == 0,
                )
            )
        except HarnessRefused as exc:
            raise SessionFailed(exc.message, code="harness_unavailable") from None
        for file, text in invocation.files.items():
            write_private(Path(file), text, self.account)
        self._start_harness(run, cwd, harness_env, name, program, invocation)

    def _start_harness(
        self,
        run: _Run,
        cwd: Path,
        env: dict[str, str],
        name: str,
        program: str,
        invocation: Invocation,
    ) -> None:
        """Run the harness built for the session; its events into the log, the transcript
        and the record; a failure (its own words) or a refused key fails the session."""
        session = run.session
        known = self.harness_programs().get(name)
        version = known.version if known is not None and known.program == program else None
        record: dict[str, str] = {"name": name, **({"version": version} if version else {})}
        self.runs.note_harness(session.id, self.owner, harness=record)
        secrets = [*invocation.secrets, env.get("HOOKSPAWN_SESSION_CREDENTIAL", "")]
        reader = EventReader(name)
        transcript = Transcript(
            transcript_path(self.settings.data_dir, session.id), self.settings.session_log_limit
        )
        stderr = Redacting(run.log, secrets)
        events = HarnessOutput(reader, transcript, run.note, run.log, secrets)
        run.note(
            f"harness: {name} ({program}{f', {version}' if version else ''}), model endpoint "
            f"{invocation.endpoint}"
        )
        for note in invocation.notes:
            run.note(note)
        started = time.monotonic()
        limit = self.settings.harness_timeout.total_seconds()
        try:
            code = run.command(
                invocation.argv,
                cwd,
                {**env, **invocation.env},
                timeout=limit,
                confined=True,
                stdin=invocation.stdin,
                output=stderr,
                stdout=events,
                destinations=[invocation.endpoint] if invocation.endpoint else [],
                stop=events.fatal.is_set,
            )
        except CommandTimedOut:
            raise SessionFailed(
                f"the harness {name} ran longer than HOOKSPAWN_HARNESS_TIMEOUT ({limit:g}s) "
                "and was stopped",
                code="harness_timeout",
            ) from None
        except CommandCancelled:
            if not events.fatal.is_set():
                raise
            raise SessionFailed(
                f"harness {name}: {reader.auth_failure} (stopped at once rather than retried; "
                f"check {KEY_SETTINGS[name]} and {BASE_URL_SETTINGS[name]})",
                code="harness_failed",
            ) from None
        finally:
            transcript.close()
            if transcript.dropped:
                run.note(
                    f"transcript limit reached (HOOKSPAWN_SESSION_LOG_LIMIT): "
                    f"{transcript.dropped} bytes of events dropped"
                )
            if reader.version:
                record["version"] = reader.version
            self.runs.note_harness(
                session.id,
                self.owner,
                harness=record,
                result=reader.result,
                usage=reader.usage.to_json() if reader.events else None,
            )
        if code != 0 or reader.error is not None:
            words = reader.error or reader.last_error or stderr.last_line
            how = f"exited with status {code}" if code != 0 else "reported an error"
            raise SessionFailed(
                f"harness {name} {how} after {time.monotonic() - started:.0f}s"
                + (f": {words}" if words else ""),
                code="harness_failed",
            )

    def _custom_harness(self, run: _Run, cwd: Path, env: dict[str, str], command: str) -> None:
        """HOOKSPAWN_HARNESS_COMMAND, for every agent: the prompt on its standard input."""
        session = run.session
        self.runs.note_harness(session.id, self.owner, harness={"name": "custom"})
        # a shell command line, as written: `$(pwd)`, pipes, `$HOOKSPAWN_MCP_CONFIG` work
        argv = ["/bin/sh", "-c", command]
        run.note(f"harness: {command}")
        started = time.monotonic()
        limit = self.settings.harness_timeout.total_seconds()
        try:
            code = run.command(
                argv,
                cwd,
                env,
                timeout=limit,
                confined=True,
                stdin=(session.initial_prompt or "").encode(),
            )
        except CommandTimedOut:
            raise SessionFailed(
                f"the harness `{argv[0]}` ran longer than HOOKSPAWN_HARNESS_TIMEOUT "
                f"({limit:g}s) and was stopped",
                code="harness_timeout",
            ) from None
        if code != 0:
            raise SessionFailed(
                f"the harness `{argv[0]}` exited with status {code} after "
                f"{time.monotonic() - started:.0f}s",
                code="harness_failed",
            )
