"""`hookspawn deploy check`: compose.yaml's environment (an env file under the process's),
every missing, invalid or inconsistent variable listed at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hookspawn.cli import main
from tests.test_compose import ROOT, filled_example

COMPOSE = str(ROOT / "compose.yaml")


@pytest.fixture(autouse=True)
def bare_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing compose or hookspawn would read in the process's environment."""
    for name in list(os.environ):
        if name.startswith(("HOOKSPAWN_", "COMPOSE_")):
            monkeypatch.delenv(name)


def check(env_file: Path, *profiles: str) -> list[str]:
    argv = ["deploy", "check", "-f", COMPOSE, "--env-file", str(env_file)]
    return argv + [arg for profile in profiles for arg in ("--profile", profile)]


def problems(out: str) -> dict[str, str]:
    """Each problem line's variable → its kind."""
    found = {}
    for line in out.splitlines()[:-1]:
        variable, kind, _ = line.split(": ", 2)
        found[variable] = kind
    return found


def test_the_documented_environment_passes_with_every_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = filled_example(tmp_path)
    assert main(check(env_file, "runner", "flower", "monitoring", "tls")) == 1
    # the runner and a dispatch URL: sessions would all go to the URL
    assert problems(capsys.readouterr().out) == {"HOOKSPAWN_DISPATCH_URL": "inconsistent"}
    assert main(check(env_file, "flower,monitoring", "tls")) == 0
    out = capsys.readouterr().out
    assert out == (
        f"compose environment complete: {env_file} and the environment "
        "(profiles: flower, monitoring, tls)\n"
    )
    no_dispatch = filled_example(tmp_path, HOOKSPAWN_DISPATCH_URL="", HOOKSPAWN_DISPATCH_SECRET="")
    assert main(check(no_dispatch, "*")) == 0, capsys.readouterr().out


def test_the_example_as_shipped_lists_everything_missing_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = ROOT / "deploy" / "compose.env.example"
    assert main(check(example)) == 1
    out = capsys.readouterr().out
    assert problems(out) == {
        "HOOKSPAWN_ADMIN_TOKEN": "missing",
        "HOOKSPAWN_WEBHOOK_SECRET": "missing",
    }
    assert out.splitlines()[-1] == f"2 to fix in {example} and the environment (profiles: none)"


def test_every_inconsistency_is_named_in_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = filled_example(
        tmp_path,
        HOOKSPAWN_WEBHOOK_SECRET="another",  # the App's own wins: this one is dead
        HOOKSPAWN_DISPATCH_SECRET="",  # the dispatch URL is still set
        HOOKSPAWN_GITHUB_APP_ID="my-app",
        HOOKSPAWN_RUNNER="",  # the runner profile is on
        HOOKSPAWN_TLS_DOMAIN="other.example.com",
        HOOKSPAWN_WEB_PUBLISH="8000",
        HOOKSPAWN_RETENTON="3d",  # misspelt
        HOOKSPAWN_RETENTION="forever",
        HOOKSPAWN_FLOWER_BASIC_AUTH=None,  # compose reads it for a secret: the line is needed
        HOOKSPAWN_SANDBOX_HOST_CONFIG=str(tmp_path / "nowhere.json"),
    )
    assert main(check(env_file, "runner", "tls", "flower")) == 1
    out = capsys.readouterr().out
    assert problems(out) == {
        "HOOKSPAWN_WEBHOOK_SECRET": "inconsistent",
        "HOOKSPAWN_DISPATCH_SECRET": "missing",
        "HOOKSPAWN_GITHUB_APP_ID": "invalid",
        "HOOKSPAWN_RUNNER": "inconsistent",
        "HOOKSPAWN_TLS_DOMAIN": "inconsistent",
        "HOOKSPAWN_WEB_PUBLISH": "inconsistent",
        "HOOKSPAWN_RETENTON": "inconsistent",
        "HOOKSPAWN_RETENTION": "invalid",
        "HOOKSPAWN_FLOWER_BASIC_AUTH": "missing",
        "HOOKSPAWN_SANDBOX_HOST_CONFIG": "invalid",
    }, out
    assert f"no such file: {tmp_path / 'nowhere.json'}" in out
    assert "compose reads the secret 'flower-basic-auth' from it" in out
    assert out.splitlines()[-1].startswith("10 to fix in ")


def test_the_process_environment_wins_over_the_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = filled_example(tmp_path, HOOKSPAWN_ADMIN_TOKEN="")
    assert main(check(env_file, "flower")) == 1
    assert problems(capsys.readouterr().out) == {"HOOKSPAWN_ADMIN_TOKEN": "missing"}
    monkeypatch.setenv("HOOKSPAWN_ADMIN_TOKEN", "from-the-shell")
    monkeypatch.setenv("COMPOSE_PROFILES", "monitoring")
    monkeypatch.setenv("HOOKSPAWN_GRAFANA_ADMIN_PASSWORD", "")
    assert main(check(env_file)) == 1
    out = capsys.readouterr().out
    assert problems(out) == {"HOOKSPAWN_GRAFANA_ADMIN_PASSWORD": "missing"}
    assert out.splitlines()[-1].endswith("(profiles: monitoring)")


def test_a_line_that_is_not_name_value_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# fine\nHOOKSPAWN_ADMIN_TOKEN='quoted # kept'\nnot a line\n")
    assert main(check(env_file)) == 2
    assert capsys.readouterr().err == (
        f"hookspawn deploy: {env_file}:3: not NAME=VALUE: 'not a line'\n"
    )
    assert main(check(tmp_path / "missing.env")) == 2
    assert "cannot read" in capsys.readouterr().err
