"""How a session's harness is started: the command line, environment and configuration files
of `claude` (harness `claude-code`) or `codex` (harness `codex`), from what the session asks
and what the runner provides. Pure: the runner resolves the program, writes the files and runs
the command inside the sandbox.

The model key goes into the harness's environment alone (`Invocation.env`); no file written
here holds it, nor the session credential (Codex reads its MCP bearer from the environment)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agents.environment_spec import Approval
from triggers.errors import TriggersError

__all__ = [
    "HARNESSES",
    "PROGRAMS",
    "HarnessInputs",
    "HarnessRefused",
    "Invocation",
    "ModelAccess",
    "build_invocation",
    "endpoint_of",
    "session_prompt",
]

#: each harness an agent may name, and the program that runs it
PROGRAMS = {"claude-code": "claude", "codex": "codex"}
HARNESSES = tuple(PROGRAMS)
#: where each harness's model key and base URL come from (the runner's settings)
KEY_SETTINGS = {"claude-code": "HOOKSPAWN_ANTHROPIC_API_KEY", "codex": "HOOKSPAWN_OPENAI_API_KEY"}
BASE_URL_SETTINGS = {
    "claude-code": "HOOKSPAWN_ANTHROPIC_BASE_URL",
    "codex": "HOOKSPAWN_OPENAI_BASE_URL",
}
#: the environment variable the harness reads its MCP bearer from (the session credential)
CREDENTIAL_VARIABLE = "HOOKSPAWN_SESSION_CREDENTIAL"
#: Codex's model provider id for the configured endpoint, and the variable it reads the key from
CODEX_PROVIDER = "hookspawn"
CODEX_KEY_VARIABLE = "OPENAI_API_KEY"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class HarnessRefused(TriggersError):
    """The harness cannot be started for this session; the message says why and what to set."""

    code = "harness_unavailable"


@dataclass(frozen=True)
class ModelAccess:
    """The model endpoint of one harness: its base URL, its key (None: not configured) and
    the model to ask for (None: the harness's default)."""

    base_url: str
    key: str | None = field(default=None, repr=False)
    model: str | None = None


@dataclass(frozen=True)
class HarnessInputs:
    """What one harness start is built from.

    `program`: the program's path as the runner found it; `prompt`: what the session asks
    (`session_prompt`); `mcp_url` and `mcp_config`: the session's MCP endpoint and the
    `--mcp-config` file holding it (None without a broker); `approval`: the environment's
    posture (`bypass` or `prompt`); `config_home`: a directory of the session's own, outside
    its home, for the harness's configuration and state (Codex's CODEX_HOME, Claude Code's
    CLAUDE_CONFIG_DIR); `as_root`: session commands run as root."""

    harness: str
    program: str
    prompt: str
    system_prompt: str | None
    model: ModelAccess
    mcp_url: str | None = None
    mcp_config: str | None = None
    approval: Approval = "bypass"
    config_home: str = ""
    as_root: bool = False


@dataclass(frozen=True)
class Invocation:
    """How to start the harness: `argv`, the variables it gets on top of the session's
    (`env`, the model key among them), the files to write first (`files`: path → contents,
    readable by the session's account only), what goes on its standard input, the model
    endpoint srt's proxy must let it reach (`host:port`), and the values never to show in a
    log or transcript (`secrets`)."""

    argv: list[str]
    env: dict[str, str] = field(repr=False)
    files: dict[str, str]
    stdin: bytes = field(repr=False)
    endpoint: str | None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    #: what the session's log says about this start beside its command
    notes: tuple[str, ...] = ()


def session_prompt(initial_prompt: str | None, message: str | None) -> str:
    """What the harness is asked: the session's `initialPrompt`, then its `message` (a start's
    or a spawning agent's), each when present. Raises HarnessRefused when both are empty."""
    parts = [text.strip() for text in (initial_prompt, message) if text and text.strip()]
    if not parts:
        raise HarnessRefused(
            "the session has neither an initialPrompt nor a message: nothing to ask the harness"
        )
    return "\n\n".join(parts)


def endpoint_of(base_url: str) -> str:
    """`host:port` of a model base URL, as srt's allowedDomains names it. Raises
    HarnessRefused for anything but an http(s) URL with a host."""
    parts = urlsplit(base_url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise HarnessRefused(f"{base_url!r} is not an http(s) URL with a host")
    try:
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise HarnessRefused(f"{base_url!r} has a port that is not a number") from None
    host = parts.hostname
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def build_invocation(inputs: HarnessInputs) -> Invocation:
    """The harness's start for `inputs`. Raises HarnessRefused naming the setting when the
    model key is missing, and for Claude Code run as root (it refuses to bypass permissions
    there)."""
    builder = {"claude-code": _claude, "codex": _codex}.get(inputs.harness)
    if builder is None:
        raise HarnessRefused(
            f"harness {inputs.harness!r} is not one hookspawn runs ({', '.join(HARNESSES)}); "
            "set HOOKSPAWN_HARNESS_COMMAND to run another"
        )
    if not inputs.model.key:
        raise HarnessRefused(
            f"harness {inputs.harness} needs a model key: set {KEY_SETTINGS[inputs.harness]} "
            f"(or {KEY_SETTINGS[inputs.harness]}_FILE)"
        )
    return builder(inputs)


def _claude(inputs: HarnessInputs) -> Invocation:
    if inputs.as_root:
        raise HarnessRefused(
            "harness claude-code cannot run as root (Claude Code refuses to bypass permissions "
            "there): set HOOKSPAWN_RUNNER_USER to an unprivileged account (the default, nobody)"
        )
    argv = [
        inputs.program,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ]
    if inputs.mcp_config:
        argv += ["--mcp-config", inputs.mcp_config, "--strict-mcp-config"]
    else:  # no broker: no MCP server at all, not whatever the home may configure
        argv += ["--strict-mcp-config"]
    if inputs.system_prompt:
        argv += ["--append-system-prompt", inputs.system_prompt]
    if inputs.model.model:
        argv += ["--model", inputs.model.model]
    assert inputs.model.key is not None
    env = {
        "ANTHROPIC_API_KEY": inputs.model.key,
        "ANTHROPIC_BASE_URL": inputs.model.base_url,
        # every GitHub tool listed from the first turn (the set is small), no tool search
        "ENABLE_TOOL_SEARCH": "false",
        # headless: no update checks, telemetry or error reports leave the sandbox
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }
    if inputs.config_home:  # its state (~/.claude.json, transcripts) outside the agent's home
        env["CLAUDE_CONFIG_DIR"] = inputs.config_home
    return Invocation(
        argv=argv,
        env=env,
        files={},
        stdin=inputs.prompt.encode(),
        endpoint=endpoint_of(inputs.model.base_url),
        secrets=(inputs.model.key,),
    )


def _toml_string(text: str) -> str:
    # JSON's escaped ASCII string is a TOML basic string
    return json.dumps(text, ensure_ascii=True)


def codex_config(inputs: HarnessInputs) -> str:
    """CODEX_HOME/config.toml for the session: the model provider at the configured base URL
    (its key read from the environment), the session's github MCP server (its bearer from the
    environment), the agent's systemPrompt as developer instructions and the approval posture."""
    lines = [
        f"model_provider = {_toml_string(CODEX_PROVIDER)}",
        *([f"model = {_toml_string(inputs.model.model)}"] if inputs.model.model else []),
        *(
            [f"developer_instructions = {_toml_string(inputs.system_prompt)}"]
            if inputs.system_prompt
            else []
        ),
    ]
    # srt is the isolation boundary: Codex's own sandbox (bubblewrap) cannot start inside it,
    # so commands run with full access to what srt shows. `prompt` asks for Codex's
    # escalation, which `codex exec` answers itself (it runs with no one to ask): an
    # escalation the model requests is refused, never run
    policy = "on-request" if inputs.approval == "prompt" else "never"
    lines += [f'approval_policy = "{policy}"', 'sandbox_mode = "danger-full-access"']
    lines += [
        "check_for_update_on_startup = false",
        "",
        f"[model_providers.{CODEX_PROVIDER}]",
        'name = "hookspawn"',
        f"base_url = {_toml_string(inputs.model.base_url)}",
        f"env_key = {_toml_string(CODEX_KEY_VARIABLE)}",
        'wire_api = "responses"',
    ]
    if inputs.mcp_url:
        lines += [
            "",
            "[mcp_servers.github]",
            f"url = {_toml_string(inputs.mcp_url)}",
            f"bearer_token_env_var = {_toml_string(CREDENTIAL_VARIABLE)}",
        ]
    return "\n".join(lines) + "\n"


def _codex(inputs: HarnessInputs) -> Invocation:
    if not inputs.config_home:
        raise HarnessRefused("no configuration directory for codex (CODEX_HOME)")
    argv = [inputs.program, "exec", "--json", "--skip-git-repo-check"]
    if inputs.approval == "bypass":
        argv.append("--dangerously-bypass-approvals-and-sandbox")
    argv.append("-")  # the prompt from standard input
    assert inputs.model.key is not None
    config = f"{inputs.config_home.rstrip('/')}/config.toml"
    return Invocation(
        argv=argv,
        env={CODEX_KEY_VARIABLE: inputs.model.key, "CODEX_HOME": inputs.config_home},
        files={config: codex_config(inputs)},
        stdin=inputs.prompt.encode(),
        endpoint=endpoint_of(inputs.model.base_url),
        secrets=(inputs.model.key,),
        notes=(
            (
                "approval prompt: codex exec has no one to ask, so it refuses the escalations "
                "the model requests; its commands run confined by srt",
            )
            if inputs.approval == "prompt"
            else ()
        ),
    )
