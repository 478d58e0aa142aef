"""`hookspawn check` says which agents' harness cannot run on this machine (its program not on
the session PATH, its model key unset), apart from the files' own findings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hookspawn.cli.check.command import harness_warnings
from tests.conftest import make_settings
from workers.session.runner.harness import SESSION_PATH

AGENTS = {"claude-code": ["b", "a"], "codex": ["c"]}


def _installed(program: str) -> bool:
    return shutil.which(program, path=SESSION_PATH) is not None


def test_an_unset_key_is_named_with_the_agents_it_leaves_without_a_harness() -> None:
    lines = harness_warnings(make_settings(), AGENTS)
    assert len(lines) == 2
    assert lines[0].startswith("harness claude-code of a, b cannot run on this machine: ")
    assert "HOOKSPAWN_ANTHROPIC_API_KEY is unset" in lines[0]
    assert lines[1].startswith("harness codex of c cannot run on this machine: ")
    assert "HOOKSPAWN_OPENAI_API_KEY is unset" in lines[1]


def test_with_the_keys_only_a_missing_program_is_said() -> None:
    settings = make_settings(anthropic_api_key="k1", openai_api_key="k2")
    lines = harness_warnings(settings, AGENTS)
    expected = [h for h, p in (("claude-code", "claude"), ("codex", "codex")) if not _installed(p)]
    assert [line.split()[1] for line in lines] == expected
    for line in lines:
        assert "scripts/setup" in line


def test_a_custom_harness_command_runs_for_every_agent() -> None:
    assert harness_warnings(make_settings(harness_command="true"), AGENTS) == []


def test_an_unknown_harness_is_the_compiler_s_business() -> None:
    assert harness_warnings(make_settings(), {"aider": ["x"]}) == []


def test_check_prints_the_warning_on_stderr_and_keeps_its_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookspawn.cli import main

    examples = Path(__file__).parents[3] / "examples" / ".auto"
    monkeypatch.delenv("HOOKSPAWN_ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("HOOKSPAWN_HARNESS_COMMAND", raising=False)
    code = main(["check", str(examples), "--no-event-schemas"])
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "ok: 3 agents compiled" in out
    assert "hookspawn check: warning: harness claude-code of " in err
    assert "HOOKSPAWN_ANTHROPIC_API_KEY is unset" in err


def test_claude_code_as_root_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    settings = make_settings(anthropic_api_key="k", runner_user="")
    [line] = [w for w in harness_warnings(settings, {"claude-code": ["a"]}) if "root" in w]
    assert "HOOKSPAWN_RUNNER_USER is empty" in line
    assert not [
        w
        for w in harness_warnings(make_settings(anthropic_api_key="k"), {"claude-code": ["a"]})
        if "root" in w
    ]
