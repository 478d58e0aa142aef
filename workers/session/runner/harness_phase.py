"""The last phase of a session's run: its harness, started confined in its sandbox.

The agent's harness CLI (Claude Code, Codex), built for the session with its prompt, model
endpoint and MCP config; or, for every agent, HOOKSPAWN_HARNESS_COMMAND. Its events go into
the session's log, its transcript and its record; a failure in its own words, a refused key
or its timeout fails the session.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

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
from workers.errors import SessionFailed
from workers.session.runner.command import Account, CommandCancelled, CommandTimedOut
from workers.session.runner.harness import (
    SESSION_PATH,
    HarnessOutput,
    HarnessProgram,
    Redacting,
    Transcript,
    harness_home,
    model_access,
    probe_harnesses,
    write_private,
)
from workers.session.runner.logs import transcript_path
from workers.session.runner.session_run import SessionRun
from workers.session.runs import SessionRuns
from workers.settings import Settings

__all__ = ["HarnessPhase"]


class HarnessPhase:
    """Starts a session's harness; knows which harnesses this runner can start."""

    def __init__(
        self, settings: Settings, runs: SessionRuns, owner: str, account: Account | None
    ) -> None:
        self.settings = settings
        self.runs = runs
        self.owner = owner
        self.account = account
        self._programs: dict[str, HarnessProgram] | None = None
        self._lock = threading.Lock()

    def programs(self) -> dict[str, HarnessProgram]:
        """Each harness this runner can start (or why not), its program found on the session
        PATH with its version: looked up once, when first asked (at the runner's start)."""
        with self._lock:
            if self._programs is None:
                self._programs = probe_harnesses(self.settings, SESSION_PATH)
            return self._programs

    def run(self, run: SessionRun, cwd: Path, env: dict[str, str]) -> None:
        """Run the session's harness in `cwd` with `env` (what setup ran with): the one its
        agent names, or HOOKSPAWN_HARNESS_COMMAND; skipped, said in the log and the record,
        when the harness's key is unset and HOOKSPAWN_HARNESS_WITHOUT_KEY is `skip`."""
        session = run.session
        harness_env = {
            **env,
            "HOOKSPAWN_SESSION_ID": session.id,
            "HOOKSPAWN_SESSION_TITLE": session.display_title or "",
            "HOOKSPAWN_SESSION_PROMPT": session.initial_prompt or "",
            "HOOKSPAWN_SESSION_MESSAGE": session.message or "",
        }
        if self.settings.harness_command:
            self._custom(run, cwd, harness_env, self.settings.harness_command)
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
        self._start(run, cwd, harness_env, name, program, invocation)

    def _start(
        self,
        run: SessionRun,
        cwd: Path,
        env: dict[str, str],
        name: str,
        program: str,
        invocation: Invocation,
    ) -> None:
        """Run the harness built for the session; its events into the log, the transcript
        and the record; a failure (its own words) or a refused key fails the session."""
        session = run.session
        known = self.programs().get(name)
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

    def _custom(self, run: SessionRun, cwd: Path, env: dict[str, str], command: str) -> None:
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
