"""The harnesses' JSON events read into log lines, the answer, usage and failures: recorded
streams of the real Claude Code and Codex (tests/triggers/session/harness_samples/)."""

from __future__ import annotations

import json
from pathlib import Path

from triggers.session.harness_events import (
    RESULT_LIMIT,
    EventReader,
    summarize_input,
    timeline,
)

SAMPLES = Path(__file__).parent / "harness_samples"


def _read(harness: str, name: str) -> tuple[EventReader, list[str]]:
    reader = EventReader(harness)
    notes: list[str] = []
    for line in (SAMPLES / name).read_bytes().splitlines():
        notes += reader.line(line)
    return reader, notes


def test_a_claude_code_run_gives_each_tool_call_the_answer_and_usage() -> None:
    reader, notes = _read("claude-code", "claude-success.jsonl")
    assert notes[0].startswith("claude-code 2.1.332: model claude-opus-5-5, ")
    assert "MCP github connected" in notes[0]
    assert notes[1:] == [
        "tool: mcp__github__get_file_contents owner=acme repo=widgets path=src/app.py",
        "tool: Bash echo hi-from-bash; id -un",
        "answer: All done: read and ran.",
    ]
    assert reader.version == "2.1.332"
    assert reader.result == "All done: read and ran."
    assert reader.error is None and reader.auth_failure is None
    assert reader.usage.to_json() == {
        "inputTokens": 70371,
        "outputTokens": 35,
        "turns": 3,
        "costUsd": 0.282184,
    }


def test_claude_code_refusing_the_key_is_an_auth_failure_from_the_first_retry() -> None:
    reader = EventReader("claude-code")
    lines = (SAMPLES / "claude-refused-key-retries.jsonl").read_bytes().splitlines()
    reader.line(lines[0])
    assert reader.auth_failure is None
    notes = reader.line(lines[1])
    assert reader.auth_failure is not None
    assert "401" in reader.auth_failure and "authentication_failed" in reader.auth_failure
    assert notes == [f"model request refused: {reader.auth_failure}"]


def test_claude_code_refusing_the_key_without_retries_fails_in_its_own_words() -> None:
    reader, notes = _read("claude-code", "claude-refused-key-no-retry.jsonl")
    assert reader.auth_failure is not None
    assert reader.error == "Invalid API key · Fix external API key"
    assert notes[-1] == "harness error: Invalid API key · Fix external API key"
    assert reader.result is None


def test_a_claude_code_tool_error_names_the_tool() -> None:
    reader = EventReader("claude-code")
    use = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/nope"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "No file"}
    assert reader.line(json.dumps({"type": "assistant", "message": {"content": [use]}})) == [
        "tool: Read /nope"
    ]
    assert reader.line(json.dumps({"type": "user", "message": {"content": [result]}})) == [
        "tool error: Read: No file"
    ]


def test_a_codex_run_gives_each_tool_call_once_the_answer_and_usage() -> None:
    reader, notes = _read("codex", "codex-success.jsonl")
    assert notes == [
        "codex: thread 01a23d99-c26b-7673-97f0-2c7238817043 started",
        "harness notice: Model metadata for `gpt-5.3-codex` not found. Defaulting to fallback "
        "metadata; this can degrade performance and cause issues.",
        "tool: github.get_file_contents owner=acme repo=widgets path=src/app.py",
        "tool: shell /usr/bin/bash -lc 'echo hi-from-codex; id -un'",
        "answer: Codex done.",
    ]
    assert reader.result == "Codex done."
    assert reader.error is None and reader.last_error is None
    assert reader.usage.to_json() == {"inputTokens": 43451, "outputTokens": 25, "turns": 1}


def test_codex_refusing_the_key_is_an_auth_failure_at_its_first_reconnect() -> None:
    reader = EventReader("codex")
    lines = (SAMPLES / "codex-refused-key.jsonl").read_bytes().splitlines()
    for line in lines[:3]:
        reader.line(line)
    assert reader.auth_failure is not None
    assert "401 Unauthorized" in reader.auth_failure
    assert reader.error is None  # a reconnect is not the turn failing
    for line in lines[3:]:
        reader.line(line)
    assert reader.error is not None and reader.error.startswith("unexpected status 401")


def test_codex_tool_failures_say_what_failed() -> None:
    reader = EventReader("codex")
    command = {
        "id": "i1",
        "type": "command_execution",
        "command": "false",
        "aggregated_output": "boom\n",
        "exit_code": 1,
        "status": "failed",
    }
    call = {
        "id": "i2",
        "type": "mcp_tool_call",
        "server": "github",
        "tool": "add_issue_comment",
        "arguments": {"owner": "acme"},
        "error": {"message": "tool_not_granted: no"},
        "status": "failed",
    }
    assert reader.line(json.dumps({"type": "item.completed", "item": command})) == [
        "tool: shell false",
        "tool error: shell: exit status 1: boom",
    ]
    assert reader.line(json.dumps({"type": "item.completed", "item": call})) == [
        "tool: github.add_issue_comment owner=acme",
        "tool error: github.add_issue_comment: tool_not_granted: no",
    ]


def test_lines_that_are_not_events_are_left_to_the_log_and_the_answer_is_bounded() -> None:
    reader = EventReader("claude-code")
    assert reader.line(b"plain words") == []
    assert reader.line(b"[1, 2]") == []
    assert reader.events == 0
    long = "é" * RESULT_LIMIT
    notes = reader.line(json.dumps({"type": "result", "subtype": "success", "result": long}))
    assert reader.result is not None and len(reader.result.encode()) <= RESULT_LIMIT
    assert len(notes) == 1 and len(notes[0]) < 2100
    assert reader.usage.cost_usd is None


def test_summaries_keep_to_one_short_line() -> None:
    assert summarize_input({"command": "ls\n-la"}) == "ls -la"
    assert summarize_input({"a": 1, "b": [1, 2]}) == "a=1 b=[1,2]"
    assert len(summarize_input({"query": "x" * 500})) == 160
    assert summarize_input(None) == ""


def test_the_timeline_reads_as_steps() -> None:
    lines = (SAMPLES / "claude-success.jsonl").read_bytes().splitlines()
    steps = timeline("claude-code", lines)
    kinds = [(s.kind, s.title) for s in steps]
    assert kinds[1:] == [
        ("tool", "mcp__github__get_file_contents"),
        ("tool", "Bash"),
        ("text", "says"),
        ("answer", "All done: read and ran."),
    ]
    assert steps[2].detail == "echo hi-from-bash; id -un"
    codex = timeline("codex", (SAMPLES / "codex-refused-key.jsonl").read_bytes().splitlines())
    assert [s.kind for s in codex][-1] == "error"
