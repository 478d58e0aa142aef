"""`hookspawn doctor`'s account of the configuration it sees: what answers, what is missing,
and a problem (exit 1) only for what would stop sessions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hookspawn.cli.doctor import Finding, configuration
from tests.agents.conftest import BASE
from tests.conftest import make_settings


def by_subject(findings: list[Finding]) -> dict[str, tuple[bool, str]]:
    return {f.subject: (f.stops, f.text) for f in findings}


def test_nothing_configured_is_no_problem_yet(tmp_path: Path) -> None:
    found = by_subject(configuration(make_settings(redis_url=None, data_dir=tmp_path)))
    assert not any(stops for stops, _ in found.values()), found
    assert set(found) == {"redis", "runner", "github app", "webhook secret"}
    assert "`hookspawn serve` runs its own" in found["redis"][1]


def test_a_configured_part_that_cannot_work_is_a_problem_naming_it(tmp_path: Path) -> None:
    (tmp_path / ".auto" / "agents").mkdir(parents=True)
    (tmp_path / ".auto" / "agents" / "a.yaml").write_text(BASE)
    settings = make_settings(
        redis_url="redis://:secret@127.0.0.1:1/0",
        runner="local",
        sandbox_config=tmp_path / "missing.json",
        github_app_id="7",
        github_private_key_path=tmp_path / "missing.pem",
        agents_dir=tmp_path / ".auto",
        anthropic_api_key=None,
        data_dir=tmp_path,
    )
    found = by_subject(configuration(settings))
    problems = {subject for subject, (stops, _) in found.items() if stops}
    assert problems == {"redis", "sandbox", "github app", "harnesses"}, found
    assert found["redis"][1].startswith("redis://:***@127.0.0.1:1/0 does not answer")
    assert "missing.json" in found["sandbox"][1]
    assert "missing.pem" in found["github app"][1]
    assert "HOOKSPAWN_ANTHROPIC_API_KEY is unset" in found["harnesses"][1]
    assert "of a cannot run" in found["harnesses"][1]


def test_what_works_is_said_so(tmp_path: Path, redis_url: str) -> None:
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n")
    settings = make_settings(
        redis_url=redis_url,
        github_app_id="7",
        github_private_key_path=key,
        webhook_secret=["s1", "s2"],
        data_dir=tmp_path,
    )
    found = by_subject(configuration(settings))
    assert not any(stops for stops, _ in found.values()), found
    assert found["redis"][1].endswith("answers")
    assert found["github app"][1] == f"App 7, key {key} readable"
    assert found["webhook secret"][1] == "set (2 secrets)"


def _doctor(data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """`hookspawn doctor` in a process of its own, with these settings and nothing else."""
    return subprocess.run(
        [sys.executable, "-m", "hookspawn.cli", "doctor"],
        env={
            "PATH": "/usr/bin:/bin",
            "HOOKSPAWN_DATA_DIR": str(data_dir),
            "PYTHONPATH": str(Path(__file__).parents[3]),
            **settings,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_the_command_exits_1_on_a_problem(tmp_path: Path) -> None:
    done = _doctor(tmp_path, HOOKSPAWN_REDIS_URL="redis://127.0.0.1:1/0")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("configuration:\n  redis ")
    assert done.stdout.rstrip().endswith("1 problem above would stop sessions here")


@pytest.mark.slow
def test_settings_that_do_not_load_are_the_problem_and_the_programs_are_still_listed(
    tmp_path: Path,
) -> None:
    done = _doctor(tmp_path, HOOKSPAWN_RETENTION="forever")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "configuration:"
    assert lines[1].startswith("  settings  PROBLEM: ") and "RETENTION" in lines[1].upper()
    assert any(line.startswith("git ") for line in lines)
