"""`hookspawn sandbox check|migrate [CONFIG]`: the sandbox configuration from the command line
(`check --probe` also starts the backend as the runner would)."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from pathlib import Path

from agents.sandbox.config import HostPaths, SandboxConfig, warnings
from agents.sandbox.migrate import migrate as migrated
from hookspawn.cli.settings import load_settings
from hookspawn.errors import CommandError
from workers.session.runner.command import account_of, runner_account
from workers.session.runner.sandbox import (
    check_document,
    host_paths_for,
    load_config,
    sandbox_available,
)
from workers.settings import Settings

__all__ = ["sandbox"]


def _config_path(args: argparse.Namespace, settings: Settings) -> Path:
    if args.config is not None:
        return Path(args.config)
    if settings.sandbox_config is not None:
        return settings.sandbox_config
    raise CommandError(f"{args.action}: give CONFIG or set HOOKSPAWN_SANDBOX_CONFIG", exit_code=2)


def sandbox(args: argparse.Namespace) -> int:
    settings = load_settings()
    path = _config_path(args, settings)
    if args.action == "check":
        if args.write:
            raise CommandError("check: --write is an option of migrate", exit_code=2)
        return _check(path, settings, probe=args.probe)
    if args.probe:
        raise CommandError("migrate: --probe is an option of check", exit_code=2)
    return _migrate(path, write=args.write, host=host_paths_for(settings.data_dir))


def _check(path: Path, settings: Settings, *, probe: bool) -> int:
    """Exit 0 when valid; else 1 and one `CONFIG: field: message` line per problem. With
    `probe`, a valid configuration's backend is also started, as the runner's start does."""
    config, problems = load_config(path, host=host_paths_for(settings.data_dir))
    for problem in problems:
        print(problem.line(str(path)))
    for warning in warnings(config) if config is not None else ():
        print(f"{path}: {warning.field}: warning: {warning.message}", file=sys.stderr)
    if config is not None and config.backend == "none":
        print(
            f"{path}: sandbox.backend: none runs session commands unconfined (development only)",
            file=sys.stderr,
        )
    if problems or config is None:
        return 1
    return _probe(path, config, settings.runner_user) if probe else 0


def _probe(path: Path, config: SandboxConfig, runner_user: str) -> int:
    """Start the backend once, running a confined command as HOOKSPAWN_RUNNER_USER (when this
    is root), exactly as the runner probes it at start: 1 and why, when it cannot."""
    try:
        account = account_of(runner_user)
    except KeyError as exc:
        print(f"{path}: sandbox.backend: cannot probe {config.backend}: {exc.args[0]}")
        return 1
    who = runner_account(account)
    reason = sandbox_available(config, account=account)
    if reason is not None:
        print(f"{path}: sandbox.backend: {config.backend} cannot start as {who}: {reason}")
        return 1
    print(
        f"{path}: sandbox.backend: {config.backend} started a probe command as {who}",
        file=sys.stderr,
    )
    return 0


def _migrate(path: Path, *, write: bool, host: HostPaths) -> int:
    """The migrated JSON on stdout (and nothing else there), a unified diff and what the
    migration merged or dropped on stderr; the file changes only with --write, and only when
    the migration changed something. A result that would still break a rule `sandbox check`
    applies is never printed nor written: exit 1, its problems on stderr."""
    try:
        text = path.read_text()
        raw = json.loads(text)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}", exit_code=2) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path} is not JSON: {exc}", exit_code=2) from None
    notes: list[str] = []
    doc, problems = migrated(raw, notes, check=lambda d: check_document(d, host=host)[1])
    if problems:
        for problem in problems:
            print(problem.line(str(path)), file=sys.stderr)
        return 1
    _, broken = check_document(doc, host=host)
    if broken:
        for problem in broken:
            print(f"{problem.line(str(path))} (after migrating)", file=sys.stderr)
        print(
            f"{path}: not migrated: the result would break the rules above (nothing written)",
            file=sys.stderr,
        )
        return 1
    for note in notes:
        print(f"{path}: {note}", file=sys.stderr)
    if doc == raw:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return 0
    new = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    sys.stdout.write(new)
    sys.stderr.writelines(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=str(path),
            tofile=f"{path} (migrated)",
        )
    )
    if write:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w") as out:
            out.write(new)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    return 0
