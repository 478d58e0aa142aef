"""A fresh machine: README's set-up is scripts/setup, which .ci/run runs as written; where the
programs the tests drive are missing, plain `pytest` passes, skipping what needs them and saying
so (tests/tool_marks.py), and `hookspawn doctor` reports the same programs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hookspawn import cli
from hookspawn.cli.doctor import TOOLS
from tests.tool_marks import REQUIRE_ALL, require

ROOT = Path(__file__).resolve().parents[1]
#: what a machine with only `pip install -e '.[dev]'` lacks
ABSENT = {"srt", "bwrap", "socat", "rg", "claude", "codex", "chromium"}


def readme_setup() -> list[str]:
    section = (ROOT / "README.md").read_text().split("\n## Set-up on a fresh machine\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def test_ci_runs_the_readme_setup_as_written_and_requires_every_test() -> None:
    setup = readme_setup()
    assert setup == [
        "python3 -m venv .venv && . .venv/bin/activate",
        "scripts/setup",
        "pytest",
    ]
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines() if not line.startswith("#")]
    # the venv line is split in two in the script (sourcing is one statement of its own)
    steps = ["python3 -m venv .venv", ". .venv/bin/activate", "scripts/setup"]
    at = [ci.index(step) for step in steps]
    assert at == sorted(at)
    assert ci[-2:] == [f"export {REQUIRE_ALL}=1", "pytest"]
    assert ci.index('cd "$work/hookspawn"') < at[0]  # in the fresh clone


def test_the_setup_script_installs_every_program_doctor_names() -> None:
    script = (ROOT / "scripts/setup").read_text()
    listed = re.search(r'^SYSTEM="([^"]*)"', script, re.MULTILINE)
    assert listed is not None
    binaries = {entry.split(":")[0] for entry in listed.group(1).split()}
    from_npm = re.search(r'^NPM_PROGRAMS="([^"]*)"', script, re.MULTILINE)
    assert from_npm is not None
    npm_binaries = {entry.split(":")[0] for entry in from_npm.group(1).split()}
    assert npm_binaries == {"srt", "claude", "codex"}
    assert binaries | npm_binaries == {tool.binary for tool in TOOLS}
    for variable, package in [
        ("SRT_PACKAGE", "@anthropic-ai/sandbox-runtime"),
        ("CLAUDE_PACKAGE", "@anthropic-ai/claude-code"),
        ("CODEX_PACKAGE", "@openai/codex"),
    ]:  # pinned, exactly
        assert re.search(rf'^{variable}="{package}@\d+\.\d+\.\d+"$', script, re.M), variable
    assert "python3 -m pip install -q -c requirements.lock -e '.[dev]'" in script
    assert os.access(ROOT / "scripts/setup", os.X_OK)


def path_without(tmp_path: Path, absent: set[str]) -> str:
    """This PATH with `absent` taken out: each directory holding one of them is replaced by a
    directory of links to everything else in it."""
    entries = []
    for n, entry in enumerate(os.environ["PATH"].split(os.pathsep)):
        directory = Path(entry)
        if not directory.is_dir() or not any((directory / name).exists() for name in absent):
            entries.append(entry)
            continue
        copy = tmp_path / f"path{n}"
        copy.mkdir()
        for program in directory.iterdir():
            if program.name not in absent:
                (copy / program.name).symlink_to(program)
        entries.append(str(copy))
    return os.pathsep.join([str(Path(sys.executable).parent), *entries])


#: a module marked by place, one test marked by place, and a runner test asking at run time
SAMPLE = [
    "tests/workers/session/sandbox/test_network.py",
    "tests/hookspawn/cli/test_demo_parts.py::test_the_demo_sandbox_is_srt_without_mounts_where_srt_works",
    "tests/hookspawn/cli/test_demo_parts.py::test_samples_are_listed_with_their_licence",
    "tests/workers/session/runner/test_harness.py::test_the_harness_gets_the_session_and_its_exit_status_ends_it",
    "tests/workers/session/runner/test_real_harness.py::test_codex_reaches_its_endpoint_with_its_key_and_ends_with_its_answer",
]


def pytest_without_tools(path: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != REQUIRE_ALL and k != "PYTEST_ADDOPTS"}
    base = {k: v for k, v in base.items() if not k.startswith(("PYTEST_XDIST", "HOOKSPAWN_"))}
    base["PATH"] = path
    argv = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", *SAMPLE]
    return subprocess.run(
        argv, cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=300
    )


def test_without_the_programs_pytest_passes_and_names_what_it_skipped(tmp_path: Path) -> None:
    path = path_without(tmp_path, ABSENT)
    done = pytest_without_tools(path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert re.search(r"\b1 passed\b", out), out  # the test needing nothing ran
    summary = [line for line in out.splitlines() if line.startswith("skipped for missing tools:")]
    assert len(summary) == 1, out
    assert "srt, bubblewrap (bwrap), socat, ripgrep (rg)" in summary[0]
    assert "1 for codex" in summary[0]  # a harness's test: its program named
    assert "scripts/setup installs them" in summary[0]
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert skips and all("scripts/setup" in s for s in skips), out
    assert all(("missing tool: srt" in s) != ("missing tool: codex" in s) for s in skips), out

    required = pytest_without_tools(path, **{REQUIRE_ALL: "1"})
    out = required.stdout + required.stderr
    assert required.returncode == 1, out
    assert f"{REQUIRE_ALL}=1 makes that a failure" in out
    assert "skipped" not in out.splitlines()[-1], out


def test_doctor_reports_each_program_and_fails_without_the_runners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", path_without(tmp_path, ABSENT))
    assert cli.main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    by_tool = {line.split()[0]: line for line in lines[: len(TOOLS)]}
    assert set(by_tool) == {tool.name for tool in TOOLS}
    for tool in TOOLS:
        line = by_tool[tool.name]
        assert tool.purpose in line
        if tool.binary in ABSENT:
            assert re.search(r"\bmissing: ", line), line
    git = by_tool["git"]
    assert re.match(r"git +\d+\.\d+(\.\d+)* /\S+/git: ", git), git  # found, with its version
    assert lines[-1].startswith("the local runner cannot run sessions without srt, bubblewrap")
    assert "scripts/setup" in lines[-1]
    assert "chromium" not in lines[-1]  # the tests' only


def test_doctor_passes_when_the_runners_programs_are_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", path_without(tmp_path, {"chromium"}))
    # skipped without them, a failure under HOOKSPAWN_TESTS_REQUIRE_ALL like every such skip
    require(*(tool.name for tool in TOOLS if tool.runner_needs))
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^chromium +missing: ", out, re.MULTILINE)  # the tests' only: still 0
    assert out.splitlines()[-1] == "everything the local runner needs is here"
