"""One session's run as the runner holds it: its directories, log and heartbeat, and how
each of its commands starts (confined in the sandbox, or staging's git outside it)."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from triggers.session.spec import SessionSpec
from triggers.session.url_rewrite import Rewrite
from workers.errors import SessionFailed
from workers.session.runner.command import (
    Account,
    CommandCancelled,
    CommandOutput,
    CommandTimedOut,
    run_command,
    runner_account,
)
from workers.session.runner.harness import SESSION_PATH, remove_harness_home
from workers.session.runner.lease import Heartbeat
from workers.session.runner.limits import RunnerLimits
from workers.session.runner.log_writer import SessionLog
from workers.session.runner.mcp_config import remove_mcp_config
from workers.session.runner.sandbox import session_tmp, srt_scratch
from workers.session.runner.sandbox_paths import HOME, SandboxPaths
from workers.session.runner.staging import host_path, make_dirs

__all__ = ["GIT_TIMEOUT", "RunnerSide", "SessionRun"]

#: seconds one staging git command may take (a fetch of a large repository included)
GIT_TIMEOUT = 600


class RunnerSide(Protocol):
    """What a run takes from the runner running it (workers.session.runner.run)."""

    workspaces: Path
    limits: RunnerLimits
    account: Account | None
    scratch: Path | None
    rewrites: list[Rewrite]

    def confine(
        self, argv: Sequence[str], workspace: Path, env: dict[str, str], **more: Any
    ) -> tuple[list[str], dict[str, str]]: ...


def _either(first: Callable[[], bool], second: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: first() or second()


class SessionRun:
    """One session's run: its files, log and heartbeat, and how its commands are started."""

    def __init__(
        self,
        runner: RunnerSide,
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
