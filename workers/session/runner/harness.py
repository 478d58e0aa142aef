"""The agent's harness on this machine: which programs the runner can start (found on the
session PATH, with a model key), the files a start writes, and what the harness prints: its
JSON events become hookspawn's lines in the session log and the transcript beside it, with the
model key and the session credential never written out."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from triggers.session.harness import (
    HARNESSES,
    KEY_SETTINGS,
    PROGRAMS,
    ModelAccess,
)
from triggers.session.harness_events import EventReader
from workers.session.runner.command import Account, CommandOutput
from workers.settings import Settings

__all__ = [
    "HARNESS_DIR",
    "SESSION_PATH",
    "HarnessOutput",
    "HarnessProgram",
    "Redacting",
    "Transcript",
    "harness_home",
    "model_access",
    "probe_harnesses",
    "program_version",
    "remove_harness_home",
    "write_private",
]

#: the harness's own configuration and state in the session root, beside the MCP config and
#: outside the home (never in a setup snapshot); removed when the run ends
#: the PATH session commands get (the host's environment is not passed on), where their
#: harness programs are looked up
SESSION_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HARNESS_DIR = ".hookspawn/harness"
#: what stands in a log or transcript for a secret the harness printed
REDACTED = b"[redacted]"
_VERSION_SECONDS = 30.0


def model_access(settings: Settings, harness: str) -> ModelAccess:
    """The model endpoint the settings give `harness` (claude-code or codex)."""
    if harness == "codex":
        return ModelAccess(settings.openai_base_url, settings.openai_api_key, settings.codex_model)
    return ModelAccess(
        settings.anthropic_base_url, settings.anthropic_api_key, settings.claude_model
    )


def program_version(path: str) -> str | None:
    """What `path --version` prints first (`2.1.3 (Claude Code)`, `codex-cli 0.1`); None
    when it cannot say. Asked once per program file in a process (an upgrade, a new file,
    is asked again)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    identity = (path, found.st_ino, found.st_size, found.st_mtime_ns)
    if identity not in _VERSIONS:
        _VERSIONS[identity] = _ask_version(path)
    return _VERSIONS[identity]


#: what each program file said, by (path, inode, size, mtime)
_VERSIONS: dict[tuple[str, int, int, int], str | None] = {}


def _ask_version(path: str) -> str | None:
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=_VERSION_SECONDS,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


@dataclass(frozen=True)
class HarnessProgram:
    """One harness as this runner sees it at start: its program (None: not on the session
    PATH), its version, and why a session of it would not run (None: it would)."""

    harness: str
    program: str | None
    version: str | None
    problem: str | None

    def line(self) -> str:
        name = PROGRAMS[self.harness]
        if self.problem is not None:
            return f"{self.harness}: cannot run ({self.problem})"
        return f"{self.harness}: {name} {self.version or '(version unknown)'} at {self.program}"


def unavailable(harness: str, program: str | None, settings: Settings) -> str | None:
    """Why `harness` cannot run here (its program missing, its key unset, Claude Code as
    root); None: it can."""
    problems = []
    if program is None:
        problems.append(
            f"{PROGRAMS[harness]} is not installed on the session PATH (scripts/setup installs it)"
        )
    if not model_access(settings, harness).key:
        problems.append(f"{KEY_SETTINGS[harness]} is unset")
    if harness == "claude-code" and os.geteuid() == 0 and not settings.runner_user:
        problems.append(
            "Claude Code refuses to run as root, and HOOKSPAWN_RUNNER_USER is empty (root)"
        )
    return "; ".join(problems) or None


def probe_harnesses(settings: Settings, path: str) -> dict[str, HarnessProgram]:
    """Each harness the runner knows, looked up on `path` (the session PATH) with its version:
    what the runner says at start and which versions sessions report."""
    found = {}
    for harness in HARNESSES:
        program = shutil.which(PROGRAMS[harness], path=path)
        found[harness] = HarnessProgram(
            harness,
            program,
            program_version(program) if program else None,
            unavailable(harness, program, settings),
        )
    return found


def harness_home(workspace: Path, account: Account | None) -> Path:
    """The harness's configuration directory in the session root (made empty, private to the
    session's account)."""
    path = workspace / HARNESS_DIR
    with contextlib.suppress(FileExistsError):
        path.parent.mkdir(mode=0o700)
    if path.exists() or path.is_symlink():
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise ValueError(f"{path} is in the way of the harness's configuration")
        shutil.rmtree(path)
    path.mkdir(mode=0o700)
    if account is not None:
        for made in (path.parent, path):
            os.chown(made, account.uid, account.gid, follow_symlinks=False)
    return path


def remove_harness_home(workspace: Path) -> None:
    shutil.rmtree(workspace / HARNESS_DIR, ignore_errors=True)


def write_private(path: Path, text: str, account: Account | None) -> None:
    """A file readable by the session's account alone (never through a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    if account is not None:
        os.chown(path, account.uid, account.gid, follow_symlinks=False)


def _redact(line: bytes, secrets: Iterable[bytes]) -> bytes:
    for secret in secrets:
        if secret:
            line = line.replace(secret, REDACTED)
    return line


class Redacting:
    """A command's output on its way to `out` (the session log), cut at line ends so that no
    secret is split between two chunks, each secret replaced by `[redacted]`."""

    #: a line longer than this is passed on in pieces (a secret across the cut may show)
    _MAX_LINE = 256 * 1024

    def __init__(self, out: CommandOutput, secrets: Iterable[str]) -> None:
        self.out = out
        self.secrets = [s.encode() for s in secrets if s]
        self._pending = b""
        #: the last non-empty line passed on (a failure message quotes it)
        self.last_line = ""

    def write(self, data: bytes, /) -> int:
        size = len(data)
        data = self._pending + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) > self._MAX_LINE:
            cut = len(data)
        self._pending = data[cut:]
        if cut:
            self._pass(data[:cut])
        return size

    def _pass(self, data: bytes) -> None:
        data = _redact(data, self.secrets)
        lines = [line for line in data.decode(errors="replace").splitlines() if line.strip()]
        if lines:
            self.last_line = lines[-1].strip()
        self.out.write(data)

    def flush(self) -> None:
        if self._pending:
            self._pass(self._pending)
            self._pending = b""
        self.out.flush()


class Transcript:
    """The harness's raw events, one per line, in a file beside the session log, never past
    `limit` bytes: what does not fit is dropped (and counted), so the file keeps the start."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = limit
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        self.size = 0
        self.dropped = 0

    def add(self, line: bytes) -> None:
        if self.dropped or self.size + len(line) + 1 > self.limit:
            self.dropped += len(line) + 1
            return
        data = line + b"\n"
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        self.size += len(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


class HarnessOutput:
    """The harness's standard output: each line is an event (kept in the transcript, read by
    `reader` into lines of the session log) or, when it is not JSON, plain output passed on
    to the log. Secrets are replaced by `[redacted]` before either sees a line. `fatal` is
    set once the harness reports its key refused (the runner then stops it)."""

    def __init__(
        self,
        reader: EventReader,
        transcript: Transcript,
        note: Callable[[str], None],
        output: CommandOutput,
        secrets: Iterable[str],
    ) -> None:
        self.reader = reader
        self.transcript = transcript
        self.note = note
        self.output = output
        self.secrets = [s.encode() for s in secrets if s]
        self._pending = b""
        self._lock = threading.Lock()
        self.fatal = threading.Event()

    def write(self, data: bytes, /) -> int:
        with self._lock:
            lines = (self._pending + data).split(b"\n")
            self._pending = lines.pop()
            for line in lines:
                self._line(line)
        return len(data)

    def _line(self, line: bytes) -> None:
        line = _redact(line.rstrip(b"\r"), self.secrets)
        if not line.strip():
            return
        before = self.reader.events
        notes = self.reader.line(line)
        if self.reader.events > before:  # an event
            self.transcript.add(line)
        else:
            self.output.write(line + b"\n")
        for note in notes:
            self.note(note)
        if self.reader.auth_failure is not None:
            self.fatal.set()

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                pending, self._pending = self._pending, b""
                self._line(pending)
