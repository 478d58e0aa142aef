"""A setup entry's script announces each command, so a failure names the one it stopped at."""

from __future__ import annotations

import subprocess
from pathlib import Path

from workers.session.runner.setup_steps import STEP_FILE, failed_command, script


def _run(commands: list[str], home: Path) -> int:
    return subprocess.run(["/bin/sh", "-c", script(commands, home)], cwd=home).returncode


def test_the_failing_command_is_named_and_the_step_file_removed(tmp_path: Path) -> None:
    commands = ["cd /", "x=1", 'test "$x" = 2', "echo never"]
    assert _run(commands, tmp_path) != 0
    assert failed_command(commands, tmp_path) == 'test "$x" = 2'
    assert not (tmp_path / STEP_FILE).exists()


def test_commands_share_one_shell_and_success_leaves_nothing(tmp_path: Path) -> None:
    commands = ["cd sub", 'echo "$(pwd)" > ../where']
    (tmp_path / "sub").mkdir()
    assert _run(commands, tmp_path) == 0
    assert (tmp_path / "where").read_text() == f"{tmp_path / 'sub'}\n"
    assert failed_command(commands, tmp_path) == commands[-1]  # the last one announced
    assert not (tmp_path / STEP_FILE).exists()
    assert failed_command(commands, tmp_path) is None  # nothing left to read
