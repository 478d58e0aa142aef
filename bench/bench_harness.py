"""The harnesses' start cost and memory: the real `claude` and `codex`, confined in srt as the
runner confines a session's commands, against the model stand-ins of tests/model_standins.py.

Each run makes a session root and starts the harness as the runner does: its command line,
environment, configuration file and prompt from `triggers.session.harness.build_invocation`,
confined by `workers.session.runner.sandbox.confine` (srt; the model's host:port the one
allowed destination, NO_PROXY emptied of it), as the runner user (`nobody` when run as root);
the model's script is one turn (it answers at once) or, with `--tool`, two (a shell command,
then the answer). It measures:

- start: from the start of the confined command (where the runner starts the harness) to the
  first model request the stand-in receives (srt's start, the harness's own start-up, its
  first request through srt's proxy);
- total: to the harness's exit;
- peak RSS: the harness's own processes (`claude`; `codex`'s node wrapper and its native
  program), their VmHWM read from /proc while they run (srt's and bubblewrap's not counted).

No MCP server is configured (the session's broker is not part of this measure).
`--no-srt` runs the same command unconfined, to see what srt adds.

Run:  .venv/bin/python bench/bench_harness.py [--runs 5] [--harness claude-code codex] [--tool]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.sandbox.config import SandboxConfig  # noqa: E402
from tests.model_standins import (  # noqa: E402
    Answer,
    AnthropicStandin,
    OpenAIStandin,
    ToolCall,
    Turn,
)
from triggers.session.harness import (  # noqa: E402
    PROGRAMS,
    HarnessInputs,
    Invocation,
    ModelAccess,
    build_invocation,
)
from workers.session.runner.command import Account, account_of  # noqa: E402
from workers.session.runner.sandbox import confine, srt_scratch  # noqa: E402

#: a model name outside Codex's catalog: its tools offered flat (see tests/model_standins.py)
CODEX_MODEL = "standin-model"
#: the names of the harness's own processes, as /proc/PID/comm shows them
OWN = {"claude-code": {"claude", "claude.exe"}, "codex": {"codex", "node"}}


def invocation(harness: str, model: AnthropicStandin | OpenAIStandin, root: Path) -> Invocation:
    """The harness's start as the runner builds it (triggers.session.harness), without MCP."""
    config_home = root / ".hookspawn" / "harness"
    config_home.mkdir(parents=True)
    return build_invocation(
        HarnessInputs(
            harness=harness,
            program=shutil.which(PROGRAMS[harness]) or PROGRAMS[harness],
            prompt="Say hello.",
            system_prompt="You are a benchmark.",
            model=ModelAccess(
                model.url, model.api_key, CODEX_MODEL if harness == "codex" else None
            ),
            config_home=str(config_home),
        )
    )


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        kids = [int(c) for c in children]
        found += kids
        todo += kids
    return found


def peak_rss(
    pid: int, names: set[str], stop: threading.Event, into: dict[tuple[int, str], int]
) -> None:
    """VmHWM (kB) of each process named in `names` under `pid`, sampled until `stop`."""
    while not stop.is_set():
        for child in [pid, *descendants(pid)]:
            try:
                name = Path(f"/proc/{child}/comm").read_text().strip()
                if name not in names:
                    continue
                for line in Path(f"/proc/{child}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        key = (child, name)
                        into[key] = max(into.get(key, 0), int(line.split()[1]))
            except OSError:
                continue
        stop.wait(0.02)


def one_run(
    harness: str, *, tool: bool, confined: bool, account: Account | None
) -> dict[str, float]:
    script: list[Turn] = [Answer("Hello.")]
    if tool:
        shell = "Bash" if harness == "claude-code" else "exec_command"
        key = "command" if harness == "claude-code" else "cmd"
        script = [ToolCall(shell, {key: "echo bench"}), Answer("Hello.")]
    standin_type = AnthropicStandin if harness == "claude-code" else OpenAIStandin
    with standin_type(script) as model, tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp:
        root = Path(tmp) / "session"
        home = root / "home"
        home.mkdir(parents=True)
        for path in (Path(tmp), root, home):
            if account is not None:
                os.chown(path, account.uid, account.gid)
        started = invocation(harness, model, root)
        for file, text in started.files.items():
            Path(file).write_text(text)
        owned = [root / ".hookspawn", root / ".hookspawn" / "harness"]
        for made in [*owned, *map(Path, started.files)]:
            if account is not None:
                os.chown(made, account.uid, account.gid)
        argv = started.argv
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            **started.env,
        }
        scratch = srt_scratch(account)
        try:
            if confined:
                argv, env = confine(
                    argv,
                    workspace=root,
                    config=SandboxConfig(backend="srt"),
                    env=env,
                    scratch=scratch,
                    destinations=[started.endpoint or model.address],
                )
            peaks: dict[tuple[int, str], int] = {}
            stop = threading.Event()
            began = time.monotonic()
            process = subprocess.Popen(
                argv,
                env=env,
                cwd=root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                user=account.uid if account else None,
                group=account.gid if account else None,
                extra_groups=[] if account else None,
            )
            sampler = threading.Thread(
                target=peak_rss, args=(process.pid, OWN[harness], stop, peaks), daemon=True
            )
            sampler.start()
            assert process.stdin is not None
            process.stdin.write(started.stdin)
            process.stdin.close()
            process.stdin = None  # given whole: communicate() has nothing more to send
            model.wait_for(lambda r: r.turn is not None, timeout=120)
            first = time.monotonic() - began
            out, err = process.communicate(timeout=300)
            total = time.monotonic() - began
            stop.set()
            sampler.join()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if process.returncode != 0 or b"Hello." not in out:
            raise SystemExit(f"{harness} failed (exit {process.returncode}): {err.decode()[-800:]}")
        figures = {"start": first, "total": total, "rss": sum(peaks.values()) / 1024}
        for (_, name), kb in peaks.items():
            figures[f"rss {name}"] = figures.get(f"rss {name}", 0) + kb / 1024
        return figures


def report(harness: str, runs: Sequence[dict[str, float]], label: str) -> str:
    def med(key: str) -> float:
        return statistics.median(r.get(key, 0) for r in runs)

    names = sorted({k.removeprefix("rss ") for r in runs for k in r if k.startswith("rss ")})
    each = ", ".join(f"{name} {med('rss ' + name):.0f}" for name in names)
    parts = f" ({each})" if len(names) > 1 else ""

    return (
        f"{harness:<12} {label}: start → first model request median {med('start') * 1000:.0f} ms "
        f"(min {min(r['start'] for r in runs) * 1000:.0f}, max "
        f"{max(r['start'] for r in runs) * 1000:.0f}); to exit {med('total') * 1000:.0f} ms; "
        f"peak RSS median {med('rss'):.0f} MB{parts} ({len(runs)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--harness", nargs="+", choices=["claude-code", "codex"], default=["claude-code", "codex"]
    )
    parser.add_argument("--tool", action="store_true", help="a shell command, then the answer")
    parser.add_argument("--no-srt", action="store_true", help="unconfined, for comparison")
    args = parser.parse_args()
    account = account_of("nobody")
    label = ("unconfined" if args.no_srt else "in srt") + (", one tool call" if args.tool else "")
    for harness in args.harness:
        one_run(harness, tool=args.tool, confined=not args.no_srt, account=account)  # warm-up
        runs = [
            one_run(harness, tool=args.tool, confined=not args.no_srt, account=account)
            for _ in range(args.runs)
        ]
        print(report(harness, runs, label), flush=True)


if __name__ == "__main__":
    main()
