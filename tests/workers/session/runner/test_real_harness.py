"""The real harnesses: Claude Code and Codex started by the runner after setup, inside srt as
the runner user, against the model stand-ins (tests/model_standins.py), with the session's
GitHub tools through the broker's MCP endpoint (the GitHub stand-in serving the repository's
contents and issues) and git through the credential helper and the broker to the git server.

Each needs its program (`scripts/setup` installs both): skipped, naming it, where it is missing.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.model_standins import (
    Answer,
    AnthropicStandin,
    ModelRequest,
    OpenAIStandin,
    ToolCall,
    Turn,
)
from tests.secret_scan import file_haystacks, leaks
from tests.workers.session.runner.conftest import RUNNER_USER, Origin, git
from tests.workers.session.runner.test_github_app import Stack, github_app_stack

pytestmark = pytest.mark.timeout(300)

#: what the GitHub stand-in serves for acme/widgets (the MCP read), beside the git server's
CONTENTS = {"README.md": "widgets\n", "src/app.py": "print('served by the GitHub stand-in')\n"}
SYSTEM_PROMPT = "You are the widget keeper: read before you push, then report on the issue."
PROMPT = "Bump the widgets and say so on issue {issue}."
ANSWER = "Pushed agent/bump and commented on the issue."
BRANCH = "agent/bump"
#: the agent's shell: a commit on a new branch, pushed through the helper and the broker
PUSH = (
    f"git checkout -q -b {BRANCH} && echo bumped >> README.md && "
    "git -c user.name=Agent -c user.email=agent@example.com commit -qam 'agent: bump' && "
    f"git push -q origin {BRANCH} && echo pushed"
)
#: the environment's setup sees the workspace; harness and approval as the agent says
AGENT = """\
name: {name}
harness: {harness}
environment:
  name: {name}-env
  image: {{kind: preset, name: node24}}
{environment}{mounts}systemPrompt: {system}
"""
MOUNTS = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
    auth:
      kind: githubApp
      capabilities: {contents: write, issues: write, pullRequests: none}
"""


def _write_agent(
    agents_dir: Path, name: str, harness: str, environment: str = "", *, mounts: bool = True
) -> None:
    path = agents_dir / "agents" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = AGENT.format(
        name=name,
        harness=harness,
        environment=textwrap.indent(environment, "  "),
        mounts=MOUNTS if mounts else "",
        system=json.dumps(SYSTEM_PROMPT),
    )
    path.write_text(text)


@contextmanager
def harness_stack(
    redis_url: str, shared_dir: Path, origin: Origin, *, pathless: str = "", **settings: Any
) -> Iterator[Stack]:
    """hookspawn with the GitHub App stack, acme/widgets' contents on the GitHub stand-in, and
    agents on it: `keeper` (claude-code), `coder` (codex) and `pathless` (claude-code, with
    `pathless` as its PATH); session commands as the runner user (Claude Code refuses to
    bypass permissions as root)."""

    def agents(agents_dir: Path) -> None:
        _write_agent(agents_dir, "keeper", "claude-code")
        _write_agent(agents_dir, "coder", "codex")
        if pathless:  # no mount: nothing runs in srt (which needs node on it) before
            environment = f"env:\n  PATH: {pathless}\n"
            _write_agent(agents_dir, "pathless", "claude-code", environment, mounts=False)

    with github_app_stack(
        redis_url,
        shared_dir,
        origin,
        agents=agents,
        runner_user=RUNNER_USER,
        harness_without_key="fail",
        **settings,
    ) as stack:
        stack.github.repos.add("acme/widgets", CONTENTS)
        yield stack


def start(stack: Stack, agent: str, prompt: str) -> str:
    answer = stack.http.post(f"/agents/{agent}/sessions", json={"initialPrompt": prompt})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def ended(stack: Stack, session_id: str, timeout: float = 240) -> dict[str, Any]:
    """The session once it ended (the real harnesses start in seconds, more on a busy machine)."""
    seen: dict[str, Any] = {}

    def done() -> bool:
        seen.update(stack.http.get(f"/sessions/{session_id}").json())
        return seen.get("status") in ("succeeded", "failed", "cancelled")

    wait_for(done, timeout=timeout, what=lambda: f"session {session_id}: {seen}")
    return seen


def mcp_tools(request: ModelRequest, prefix: str) -> set[str]:
    return {name.removeprefix(prefix) for name in request.tool_names if name.startswith(prefix)}


def scan(stack: Stack, session: dict[str, Any], secrets: dict[str, str]) -> None:
    """No secret in the session's record, its log, its transcript or any file hookspawn left
    (the data directory holds the session roots, logs and transcripts)."""
    session_id = session["id"]
    log = stack.http.get(f"/sessions/{session_id}/log")
    transcript = stack.http.get(f"/sessions/{session_id}/transcript")
    files = [p for p in stack.settings.data_dir.rglob("*") if p.is_file()]
    places = [
        ("the session record", json.dumps(session).encode()),
        ("the session log", log.content),
        ("the transcript", transcript.content),
        *file_haystacks(files),
    ]
    found, scanned = leaks(secrets, places)
    assert found == []
    assert scanned == len(files) + 3


@pytest.mark.needs("claude-code")
def test_claude_code_reads_pushes_and_comments_and_the_session_ends_with_its_answer(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    script: list[Turn] = [
        ToolCall(
            "mcp__github__get_file_contents",
            {"owner": "acme", "repo": "widgets", "path": "src/app.py"},
        ),
        ToolCall("Bash", {"command": PUSH, "description": "push the bump"}),
        ToolCall(
            "mcp__github__add_issue_comment",
            {"owner": "acme", "repo": "widgets", "issue_number": 1, "body": "Bumped."},
        ),
        Answer(ANSWER),
    ]
    with (
        AnthropicStandin(script) as model,
        harness_stack(
            redis_url,
            shared_dir,
            origin,
            anthropic_api_key=model.api_key,
            anthropic_base_url=model.url,
        ) as stack,
    ):
        issue = stack.github.repos.add_issue("acme/widgets", "Bump the widgets")
        with stack.runner():
            session_id = start(stack, "keeper", PROMPT.format(issue=issue))
            session = ended(stack, session_id)
        scan(stack, session, {"the model key": model.api_key, **stack.secrets})
        comments = stack.github.repos.comments("acme/widgets")
        transcript = stack.http.get(f"/sessions/{session_id}/transcript")
    log = session["logTail"]
    assert session["status"] == "succeeded", (session["failure"], log)
    assert session["result"] == ANSWER
    assert session["harnessRun"]["name"] == "claude-code"
    assert "2.1." in session["harnessRun"]["version"]
    usage = session["usage"]
    assert usage["turns"] == 4 and usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    # the model saw the session's granted GitHub tools from the first turn (not the
    # ungranted pull request ones), the agent's systemPrompt and the prompt
    first = model.turns()[0]
    assert first.headers["x-api-key"] == model.api_key
    granted = mcp_tools(first, "mcp__github__")
    assert {"get_file_contents", "add_issue_comment", "push_files"} <= granted
    assert "create_pull_request" not in granted
    assert "Bash" in first.tool_names
    assert SYSTEM_PROMPT in model.system_text(first)
    assert PROMPT.format(issue=issue) in model.user_texts(first)[-1]
    # the MCP read returned the file; the push ran as the runner user through the broker
    results = model.tool_results(model.turns()[-1])
    assert results[0] == CONTENTS["src/app.py"]
    assert results[1].strip() == "pushed"
    widgets = origin.root / "acme" / "widgets.git"
    assert git(widgets, "log", "-1", "--format=%s", BRANCH) == "agent: bump"
    # the comment reached GitHub
    assert [(c["issue"], c["body"]) for c in comments] == [(issue, "Bumped.")]
    # each tool call, and the answer, in the session's log
    assert "tool: mcp__github__get_file_contents owner=acme repo=widgets path=src/app.py" in log
    assert f"tool: Bash git checkout -q -b {BRANCH} && echo bumped" in log
    assert "tool: mcp__github__add_issue_comment" in log
    assert f"answer: {ANSWER}" in log
    # the raw events kept beside the log: Claude Code's own, from its start to its result
    assert transcript.status_code == 200
    assert transcript.headers["x-harness"] == "claude-code"
    events = [json.loads(line) for line in transcript.text.splitlines()]
    assert (events[0]["type"], events[0]["subtype"]) == ("system", "init")
    assert (events[-1]["type"], events[-1]["result"]) == ("result", ANSWER)
    called = [
        block["name"]
        for event in events
        if event["type"] == "assistant"
        for block in event["message"]["content"]
        if block["type"] == "tool_use"
    ]
    assert called == [
        "mcp__github__get_file_contents",
        "Bash",
        "mcp__github__add_issue_comment",
    ]


@pytest.mark.needs("codex")
def test_codex_reaches_its_endpoint_with_its_key_and_ends_with_its_answer(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    script: list[Turn] = [
        ToolCall(
            "mcp__github__get_file_contents",
            {"owner": "acme", "repo": "widgets", "path": "src/app.py"},
        ),
        ToolCall("exec_command", {"cmd": "id -un"}),
        Answer("Read it, ran it."),
    ]
    with (
        OpenAIStandin(script) as model,
        harness_stack(
            redis_url,
            shared_dir,
            origin,
            openai_api_key=model.api_key,
            openai_base_url=model.url,
            # outside Codex's catalog: its tools offered as functions, the session's MCP server's
            # among them (a catalog model defers them or runs them from JavaScript)
            codex_model="standin-model",
        ) as stack,
    ):
        with stack.runner():
            session_id = start(stack, "coder", "Read src/app.py.")
            session = ended(stack, session_id)
        scan(stack, session, {"the model key": model.api_key, **stack.secrets})
    log = session["logTail"]
    assert session["status"] == "succeeded", (session["failure"], log)
    assert session["result"] == "Read it, ran it."
    assert session["harnessRun"]["name"] == "codex"
    first = model.turns()[0]
    assert first.headers["authorization"] == f"Bearer {model.api_key}"
    assert first.body["model"] == "standin-model"
    assert "mcp__github" in first.tool_names
    assert SYSTEM_PROMPT in model.instructions(first)
    assert "Read src/app.py." in model.user_texts(first)[-1]
    results = model.tool_results(model.turns()[-1])
    assert CONTENTS["src/app.py"].strip() in results[0]
    assert RUNNER_USER in results[1]
    assert session["usage"]["inputTokens"] > 0
    assert "tool: github.get_file_contents" in log


@pytest.mark.needs("claude-code")
def test_a_refused_key_fails_the_session_at_once_in_the_harness_words(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    # the stand-in refuses as the API does: Claude Code would retry ten times over minutes
    with (
        AnthropicStandin([Answer("never")], refuse_keys=True) as model,
        harness_stack(
            redis_url,
            shared_dir,
            origin,
            anthropic_api_key="sk-ant-refused-0123456789",
            anthropic_base_url=model.url,
        ) as stack,
    ):
        with stack.runner():
            session_id = start(stack, "keeper", "Anything.")
            session = ended(stack, session_id, timeout=120)
        scan(stack, session, {"the model key": "sk-ant-refused-0123456789", **stack.secrets})
    assert session["status"] == "failed", session["logTail"]
    failure = session["failure"]
    assert failure["code"] == "harness_failed"
    assert "harness claude-code" in failure["message"]
    assert "refused the key" in failure["message"] and "401" in failure["message"]
    assert "HOOKSPAWN_ANTHROPIC_API_KEY" in failure["message"]
    assert len(model.requests) < 5  # stopped rather than retried
    assert model.requests[0].headers["x-api-key"] == "sk-ant-refused-0123456789"


@pytest.mark.needs("codex")
def test_a_key_codex_is_refused_fails_the_session_in_its_words_without_the_key(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    key = "sk-proj-refused-0123456789abcdef"
    with (
        OpenAIStandin([Answer("never")], refuse_keys=True) as model,
        harness_stack(
            redis_url,
            shared_dir,
            origin,
            openai_api_key=key,
            openai_base_url=model.url,
            codex_model="standin-model",
        ) as stack,
    ):
        with stack.runner():
            session_id = start(stack, "coder", "Anything.")
            session = ended(stack, session_id, timeout=120)
        scan(stack, session, {"the model key": key, **stack.secrets})
    assert session["status"] == "failed", session["logTail"]
    failure = session["failure"]
    assert failure["code"] == "harness_failed"
    # Codex's words, quoting the endpoint's (which shows the key's ends only)
    assert "401 Unauthorized: Incorrect API key provided" in failure["message"]
    assert "HOOKSPAWN_OPENAI_API_KEY" in failure["message"]
    assert model.requests[0].headers["authorization"] == f"Bearer {key}"


def test_a_harness_program_not_on_the_session_path_is_unavailable_naming_it_and_setup(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    # the session's PATH (the agent's environment) leads to no `claude`
    bare = "/usr/local/sbin:/usr/sbin"
    with (
        harness_stack(
            redis_url,
            shared_dir,
            origin,
            pathless=bare,
            anthropic_api_key="sk-ant-never-used",
            anthropic_base_url="http://127.0.0.1:9",
        ) as stack,
        stack.runner(),
    ):
        session_id = start(stack, "pathless", "Anything.")
        session = ended(stack, session_id, timeout=120)
    assert session["status"] == "failed", session["logTail"]
    failure = session["failure"]
    assert failure["code"] == "harness_unavailable", (failure, session["logTail"])
    assert "'claude'" in failure["message"] and "scripts/setup" in failure["message"]
    assert bare in failure["message"]
