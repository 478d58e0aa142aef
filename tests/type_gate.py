"""mypy strict for `pytest`, started in the background when the run begins.

mypy strict from cold takes more than a minute of one core. The test (tests/test_tooling.py)
stays in the suite, but the run that collects it starts mypy as the session begins (in the
controlling process, before any xdist worker), so mypy checks the code while the other tests
run; the test then waits for that run's exit status and output. Started nowhere else (a run of
one test folder that cannot contain tests/test_tooling.py starts no mypy), and the test runs
mypy itself when no background run was started for it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TOOLING = ROOT / "tests" / "test_tooling.py"
#: the directory of the background run, for the xdist workers (they inherit the environment)
ENV = "TESTS_BACKGROUND_MYPY_DIR"


def mypy_argv() -> list[str]:
    return [str(BIN / "mypy")]


def _selects_tooling(config: pytest.Config) -> bool:
    """Whether this run's paths can contain tests/test_tooling.py's mypy test."""
    args = [a for a in config.args if not a.startswith("-")] or [str(ROOT / "tests")]
    for arg in args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve()
        if path == TOOLING or (path.is_dir() and TOOLING.is_relative_to(path)):
            return True
    return False


def start(config: pytest.Config) -> None:
    """In the controlling process of a run that selects the mypy test: start mypy."""
    if hasattr(config, "workerinput") or os.environ.get(ENV) or not _selects_tooling(config):
        return
    if config.getoption("collectonly", False):
        return
    directory = Path(tempfile.mkdtemp(prefix="hookspawn-mypy-"))
    out, status = directory / "output", directory / "status"
    # the exit status is written last (to a temporary name, then renamed): its presence says done
    script = (
        f"{shlex.join(mypy_argv())} >{shlex.quote(str(out))} 2>&1; "
        f"echo $? >{shlex.quote(str(status))}.tmp && mv {shlex.quote(str(status))}.tmp "
        f"{shlex.quote(str(status))}"
    )
    popen = subprocess.Popen(
        ["/bin/sh", "-c", script], cwd=ROOT, stdin=subprocess.DEVNULL, start_new_session=True
    )
    os.environ[ENV] = str(directory)
    config.stash[_RUN] = _Run(popen, directory)


def stop(config: pytest.Config) -> None:
    """At the end of the run: end a mypy still running (the run was cut short), remove its
    files."""
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    if run.popen.poll() is None:
        os.killpg(run.popen.pid, 15)
        run.popen.wait(10)
    os.environ.pop(ENV, None)
    shutil.rmtree(run.directory, ignore_errors=True)


@dataclass
class _Run:
    popen: subprocess.Popen[bytes]
    directory: Path


_RUN = pytest.StashKey[_Run]()


@dataclass
class Result:
    returncode: int
    output: str


def result(timeout: float) -> Result:
    """mypy's exit status and output: the background run's when there is one (waiting for it
    up to `timeout` seconds), else a run of its own."""
    background = os.environ.get(ENV)
    if not background:
        done = subprocess.run(
            mypy_argv(), cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
        return Result(done.returncode, done.stdout + done.stderr)
    from tests.conftest import wait_for

    directory = Path(background)
    status = directory / "status"
    wait_for(status.exists, timeout, 0.2, what=f"the background mypy run in {directory}")
    return Result(
        int(status.read_text().strip()), (directory / "output").read_text(errors="replace")
    )
