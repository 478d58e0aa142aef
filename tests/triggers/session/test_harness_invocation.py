"""How each harness is started: its command line, environment and configuration per posture."""

from __future__ import annotations

import tomllib

import pytest

from triggers.session.harness import (
    HarnessInputs,
    HarnessRefused,
    ModelAccess,
    build_invocation,
    endpoint_of,
    session_prompt,
)

KEY = "sk-test-0123456789"


def _inputs(harness: str, **changes: object) -> HarnessInputs:
    values: dict[str, object] = {
        "harness": harness,
        "program": f"/usr/bin/{'claude' if harness == 'claude-code' else 'codex'}",
        "prompt": "Review the pull request.",
        "system_prompt": "You are the reviewer.",
        "model": ModelAccess("http://127.0.0.1:9100", KEY, None),
        "mcp_url": "http://127.0.0.1:8000/sessions/s1/mcp",
        "mcp_config": "/data/workspaces/s1/.hookspawn/mcp.json",
        "config_home": "/data/workspaces/s1/.hookspawn/harness",
    }
    values.update(changes)
    return HarnessInputs(**values)  # type: ignore[arg-type]


def test_claude_code_runs_headless_with_the_session_mcp_server_only_and_permissions_bypassed() -> (
    None
):
    started = build_invocation(_inputs("claude-code"))
    argv = started.argv
    assert argv[:2] == ["/usr/bin/claude", "-p"]
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert "--verbose" in argv
    assert "--dangerously-skip-permissions" in argv
    assert argv[argv.index("--mcp-config") + 1] == "/data/workspaces/s1/.hookspawn/mcp.json"
    assert "--strict-mcp-config" in argv
    assert argv[argv.index("--append-system-prompt") + 1] == "You are the reviewer."
    assert "--model" not in argv
    assert started.stdin == b"Review the pull request."
    assert started.env["ANTHROPIC_API_KEY"] == KEY
    assert started.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9100"
    assert started.env["CLAUDE_CONFIG_DIR"] == "/data/workspaces/s1/.hookspawn/harness"
    assert started.endpoint == "127.0.0.1:9100"
    assert started.files == {}
    assert KEY not in " ".join(argv)
    assert started.secrets == (KEY,)


def test_claude_code_asks_for_the_configured_model_and_without_a_broker_no_mcp_at_all() -> None:
    started = build_invocation(
        _inputs(
            "claude-code",
            model=ModelAccess("https://api.anthropic.com", KEY, "claude-x"),
            mcp_config=None,
            mcp_url=None,
            system_prompt=None,
        )
    )
    assert started.argv[started.argv.index("--model") + 1] == "claude-x"
    assert "--mcp-config" not in started.argv
    assert "--strict-mcp-config" in started.argv
    assert "--append-system-prompt" not in started.argv
    assert started.endpoint == "api.anthropic.com:443"


def test_claude_code_as_root_is_refused_saying_what_to_set() -> None:
    with pytest.raises(HarnessRefused, match="HOOKSPAWN_RUNNER_USER"):
        build_invocation(_inputs("claude-code", as_root=True))


@pytest.mark.parametrize(
    ("harness", "setting"),
    [("claude-code", "HOOKSPAWN_ANTHROPIC_API_KEY"), ("codex", "HOOKSPAWN_OPENAI_API_KEY")],
)
def test_a_missing_key_names_its_setting(harness: str, setting: str) -> None:
    with pytest.raises(HarnessRefused) as refused:
        build_invocation(_inputs(harness, model=ModelAccess("https://x.example", None, None)))
    assert setting in str(refused.value)
    assert refused.value.code == "harness_unavailable"


def test_an_unknown_harness_is_refused_pointing_at_the_custom_command() -> None:
    with pytest.raises(HarnessRefused, match="HOOKSPAWN_HARNESS_COMMAND"):
        build_invocation(_inputs("aider"))


def test_codex_bypass_never_asks_and_its_config_holds_no_secret() -> None:
    started = build_invocation(_inputs("codex"))
    assert started.argv == [
        "/usr/bin/codex",
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-",
    ]
    assert started.stdin == b"Review the pull request."
    assert started.env == {
        "OPENAI_API_KEY": KEY,
        "CODEX_HOME": "/data/workspaces/s1/.hookspawn/harness",
    }
    [(path, text)] = started.files.items()
    assert path == "/data/workspaces/s1/.hookspawn/harness/config.toml"
    assert KEY not in text
    config = tomllib.loads(text)
    assert config["model_provider"] == "hookspawn"
    assert config["model_providers"]["hookspawn"] == {
        "name": "hookspawn",
        "base_url": "http://127.0.0.1:9100",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
    }
    assert config["mcp_servers"]["github"] == {
        "url": "http://127.0.0.1:8000/sessions/s1/mcp",
        "bearer_token_env_var": "HOOKSPAWN_SESSION_CREDENTIAL",
    }
    assert config["developer_instructions"] == "You are the reviewer."
    assert config["approval_policy"] == "never"
    assert config["sandbox_mode"] == "danger-full-access"
    assert "model" not in config
    assert started.notes == ()
    assert started.endpoint == "127.0.0.1:9100"


def test_codex_prompt_posture_uses_codex_approval_escalation() -> None:
    started = build_invocation(
        _inputs(
            "codex",
            approval="prompt",
            model=ModelAccess("https://api.openai.com/v1", KEY, "gpt-x"),
            system_prompt='Quote "this"\nand that \\ too',
            mcp_url=None,
        )
    )
    assert "--dangerously-bypass-approvals-and-sandbox" not in started.argv
    config = tomllib.loads(next(iter(started.files.values())))
    assert config["approval_policy"] == "on-request"
    # Codex's own sandbox cannot start inside srt: srt is the boundary either way
    assert config["sandbox_mode"] == "danger-full-access"
    assert config["model"] == "gpt-x"
    assert config["developer_instructions"] == 'Quote "this"\nand that \\ too'
    assert "mcp_servers" not in config
    assert "refuses the escalations" in started.notes[0]
    assert started.endpoint == "api.openai.com:443"


def test_the_prompt_is_the_initial_prompt_then_the_message() -> None:
    assert session_prompt("Do it.", None) == "Do it."
    assert session_prompt(None, "hi") == "hi"
    assert session_prompt("Do it.", "hi") == "Do it.\n\nhi"
    with pytest.raises(HarnessRefused, match="neither an initialPrompt nor a message"):
        session_prompt(" ", None)


def test_endpoints_as_srt_names_them() -> None:
    assert endpoint_of("http://localhost:8080/v1") == "localhost:8080"
    assert endpoint_of("http://[::1]:9000") == "[::1]:9000"
    assert endpoint_of("http://gateway.example") == "gateway.example:80"
    for bad in ("ftp://x.example", "api.openai.com", "http://x.example:port"):
        with pytest.raises(HarnessRefused):
            endpoint_of(bad)
