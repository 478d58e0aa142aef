"""Secrets as files: `HOOKSPAWN_<SECRET>_FILE` read once into the settings, trailing newline off;
a variable beside its `_FILE` and an unreadable file are errors naming them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.secret_files import SecretFileError
from workers.settings import Settings


def test_each_secret_comes_from_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in {
        "WEBHOOK_SECRET": "old,new\n",
        "ADMIN_TOKEN": "admin-token\n",
        "DISPATCH_SECRET": "dispatch key\r\n",
    }.items():
        (tmp_path / name).write_text(text, newline="")
        monkeypatch.delenv(f"HOOKSPAWN_{name}", raising=False)
        monkeypatch.setenv(f"HOOKSPAWN_{name}_FILE", str(tmp_path / name))
    settings = Settings()
    assert settings.webhook_secret == ["old", "new"]
    assert settings.admin_token == "admin-token"
    assert settings.dispatch_secret == "dispatch key"


def test_without_files_the_variables_still_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKSPAWN_ADMIN_TOKEN", "from-env")
    monkeypatch.setenv("HOOKSPAWN_DISPATCH_SECRET_FILE", "")  # empty: unset
    monkeypatch.delenv("HOOKSPAWN_ADMIN_TOKEN_FILE", raising=False)
    settings = Settings()
    assert settings.admin_token == "from-env"


def test_a_variable_and_its_file_both_set_is_an_error_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("t\n")
    monkeypatch.setenv("HOOKSPAWN_ADMIN_TOKEN", "t")
    monkeypatch.setenv("HOOKSPAWN_ADMIN_TOKEN_FILE", str(tmp_path / "token"))
    with pytest.raises(SecretFileError) as caught:
        Settings()
    said = caught.value.message
    assert "HOOKSPAWN_ADMIN_TOKEN and HOOKSPAWN_ADMIN_TOKEN_FILE are both set" in said


def test_an_unreadable_file_is_an_error_naming_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-secret"
    monkeypatch.delenv("HOOKSPAWN_WEBHOOK_SECRET", raising=False)
    monkeypatch.setenv("HOOKSPAWN_WEBHOOK_SECRET_FILE", str(missing))
    with pytest.raises(SecretFileError) as caught:
        Settings()
    assert f"HOOKSPAWN_WEBHOOK_SECRET_FILE: cannot read {missing}" in caught.value.message


def test_the_command_line_says_it_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_DISPATCH_SECRET_FILE"] = str(tmp_path / "absent")
    done = subprocess.run(
        [sys.executable, "-m", "hookspawn.cli", "check", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"hookspawn check: HOOKSPAWN_DISPATCH_SECRET_FILE: cannot read {tmp_path / 'absent'}: "
        "No such file or directory"
    ]
