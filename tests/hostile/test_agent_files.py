"""Hostile agent files: clear errors in bounded memory, in-process and via the CLI.

tests/agents already covers a billion-laughs file, a 10 MB file, a 1,000-deep import chain
and short cycles for their messages. This adds what was missing: the same attacks reached
through imports, a 1,000-file cycle, an exponential diamond of imports, deep YAML nesting,
peak memory (tracemalloc) for each, and `hookspawn check` run as a subprocess on each tree
(exit 1, `FILE:LINE: field.path: message`, child peak RSS). Times: bench_hostile_files.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from agents import compile_dir
from agents.source import MAX_FILE_BYTES
from tests.agents.test_source import BILLION_LAUGHS

pytestmark = pytest.mark.slow

BASE = (
    "name: a\nharness: claude-code\n"
    "environment:\n  name: runtime\n  image: {kind: preset, name: node24}\n"
)
CLI = Path(sys.executable).parent / "hookspawn"
LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): (?:(?P<path>[\w.$-]+): )?(?P<message>.+)$")
PEAK_BYTES = 32 * 1024 * 1024  # tracemalloc peak while compiling one hostile tree
CHILD_RSS_KB = 128 * 1024  # peak RSS of the whole `hookspawn check` (~67 MB on a small tree)


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    auto = root / ".auto"
    for name, text in files.items():
        path = auto / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return auto


def bomb_fragment(root: Path) -> Path:
    return write(
        root,
        {
            "fragments/bomb.yaml": BILLION_LAUGHS,
            "agents/a.yaml": BASE + "imports: [../fragments/bomb.yaml]\n",
        },
    )


def huge_fragment(root: Path) -> Path:
    auto = write(root, {"agents/a.yaml": BASE + "imports: [../fragments/huge.yaml]\n"})
    huge = auto / "fragments" / "huge.yaml"
    huge.parent.mkdir(parents=True)
    with huge.open("w") as handle:
        handle.write("env:\n")
        handle.write("  K: " + "x" * 100 + "\n" + "# padding\n" * 1_000_000)
    assert huge.stat().st_size > 10_000_000
    return auto


def huge_agent(root: Path) -> Path:
    return write(root, {"agents/a.yaml": BASE + "systemPrompt: '" + "a" * 10_500_000 + "'\n"})


def long_cycle(root: Path) -> Path:
    files: dict[str, str | bytes] = {
        f"fragments/c{i}.yaml": f"imports: [c{(i + 1) % 1000}.yaml]\n" for i in range(1000)
    }
    files["agents/a.yaml"] = BASE + "imports: [../fragments/c0.yaml]\n"
    return write(root, files)


def deep_chain(root: Path) -> Path:
    files: dict[str, str | bytes] = {
        f"fragments/f{i}.yaml": f"imports: [f{i + 1}.yaml]\n" if i < 999 else "env: {}\n"
        for i in range(1000)
    }
    files["agents/a.yaml"] = BASE + "imports: [../fragments/f0.yaml]\n"
    return write(root, files)


def flow_nesting(root: Path) -> Path:
    return write(root, {"agents/a.yaml": BASE + "env: " + "[" * 100_000 + "]" * 100_000 + "\n"})


def block_nesting(root: Path) -> Path:
    return write(root, {"agents/a.yaml": "".join("  " * i + "k:\n" for i in range(600))})


#: tree builder → (file, line, field path, message fragment) of the one error expected
CASES: dict[str, tuple[Callable[[Path], Path], str, int, str, str]] = {
    "billion laughs in an imported fragment": (
        bomb_fragment,
        ".auto/fragments/bomb.yaml",
        1,
        "(file)",
        "YAML aliases (*name) are not allowed",
    ),
    "10 MB imported fragment": (
        huge_fragment,
        ".auto/fragments/huge.yaml",
        1,
        "(file)",
        f"larger than {MAX_FILE_BYTES} bytes",
    ),
    "10 MB agent file": (
        huge_agent,
        ".auto/agents/a.yaml",
        1,
        "(file)",
        f"larger than {MAX_FILE_BYTES} bytes",
    ),
    # a cycle longer than the chain limit is stopped by the limit before it closes
    "1,000-file import cycle": (
        long_cycle,
        ".auto/fragments/c62.yaml",
        1,
        "imports.0",
        "import chain deeper than 64 files",
    ),
    "1,000-deep import chain": (
        deep_chain,
        ".auto/fragments/f62.yaml",
        1,
        "imports.0",
        "import chain deeper than 64 files",
    ),
    "flow nesting 100,000 deep": (
        flow_nesting,
        ".auto/agents/a.yaml",
        6,
        "(file)",
        "invalid YAML",
    ),
    "block nesting 600 deep": (
        block_nesting,
        ".auto/agents/a.yaml",
        66,
        "(file)",
        "nested deeper than 64 levels",
    ),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", sorted(CASES))
def test_compile_gives_one_clear_error_in_bounded_memory(tmp_path: Path, name: str) -> None:
    build, file, line, path, fragment = CASES[name]
    auto = build(tmp_path)
    tracemalloc.start()
    try:
        result = compile_dir(auto)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(e.file, e.line, e.path) for e in result.errors] == [(file, line, path)], [
        str(e) for e in result.errors
    ]
    assert fragment in result.errors[0].message
    assert peak < PEAK_BYTES, f"{name}: peak {peak / 1e6:.1f} MB"


@pytest.mark.timeout(30)
def test_exponential_diamond_of_imports_is_resolved_once_per_file(tmp_path: Path) -> None:
    """60 levels, each file importing both files of the next: 2**60 paths, 120 files."""
    files: dict[str, str | bytes] = {}
    for level in range(60):
        after = f"[l{level + 1}a.yaml, l{level + 1}b.yaml]" if level < 59 else "[]"
        for side in "ab":
            files[f"fragments/l{level}{side}.yaml"] = (
                f"imports: {after}\nenv: {{K{level}{side}: v}}\n"
            )
    files["agents/a.yaml"] = BASE + "imports: [../fragments/l0a.yaml, ../fragments/l0b.yaml]\n"
    auto = write(tmp_path, files)
    tracemalloc.start()
    try:
        result = compile_dir(auto)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.errors == (), [str(e) for e in result.errors]
    agent = result.agent("a")
    assert agent is not None
    assert len(agent.env) == 120
    assert peak < PEAK_BYTES


def _high_water_kb(pid: int) -> int:
    """VmHWM of a running process (0 once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found[1]) if found else 0


def run_check(auto: Path, tmp_path: Path, timeout: float = 60) -> tuple[int, str, int]:
    """`hookspawn check DIR` as a subprocess: (exit code, stdout, peak RSS in KB).

    The peak is read from /proc while the child runs: getrusage's ru_maxrss of a child
    also counts the parent's pages it was forked (or vforked) from, before its exec.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_DATA_DIR"] = str(tmp_path / "data")
    started = time.monotonic()
    peak = 0
    proc = subprocess.Popen(
        [str(CLI), "check", str(auto)],
        cwd=tmp_path,  # files are named as they open from here: .auto/...
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        while proc.poll() is None:
            peak = max(peak, _high_water_kb(proc.pid))
            if time.monotonic() - started > timeout:
                pytest.fail(f"hookspawn check took over {timeout}s on {auto}")
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            proc.kill()
        output, _ = proc.communicate()
    return proc.returncode, output.decode(), peak


@pytest.mark.timeout(60)
@pytest.mark.skipif(not CLI.exists(), reason="hookspawn CLI not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_check_exits_1_with_file_line_messages(tmp_path: Path, name: str) -> None:
    build, file, line, path, fragment = CASES[name]
    auto = build(tmp_path)
    code, output, rss = run_check(auto, tmp_path)
    assert code == 1, output
    lines = output.splitlines()
    assert lines[-1] == "1 error", output
    parsed = [LINE.match(text) for text in lines[:-1]]
    assert len(parsed) == 1 and parsed[0] is not None, output
    found = parsed[0]
    # a whole-file problem has no field path: `FILE:LINE: message`
    shown = found["path"] or "(file)"
    assert (found["file"], int(found["line"]), shown) == (file, line, path)
    assert fragment in found["message"]
    assert rss < CHILD_RSS_KB, f"{name}: hookspawn check peaked at {rss / 1024:.0f} MB"


@pytest.mark.timeout(60)
@pytest.mark.skipif(not CLI.exists(), reason="hookspawn CLI not installed")
def test_a_file_of_many_tiny_nodes_is_refused_cheaply(tmp_path: Path) -> None:
    text = BASE + "env: [" + "1," * 450_000 + "1]\n"
    assert len(text) < MAX_FILE_BYTES
    auto = write(tmp_path, {"agents/a.yaml": text})
    code, output, rss = run_check(auto, tmp_path)
    assert code == 1, output
    assert rss < CHILD_RSS_KB, f"peak {rss / 1024:.0f} MB"
