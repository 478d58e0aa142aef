"""The model stand-ins themselves, over plain HTTP: the streams they send for each kind of turn,
what they record, and how they refuse a key."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests import loopback
from tests.model_standins import (
    SCRIPT_ENDED,
    Answer,
    AnthropicStandin,
    OpenAIStandin,
    ToolCall,
    Turn,
)

KEY = "sk-ant-test-0123456789abcdef"
OPENAI_KEY = "sk-proj-test-0123456789abcdef"
BASH = {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}


def events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """A server-sent-events body as (event, data) pairs; each data line's event matches its
    data's `type`."""
    assert response.headers["content-type"].startswith("text/event-stream")
    found = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = json.loads(lines["data"])
        assert data["type"] == lines["event"]
        found.append((lines["event"], data))
    return found


def messages(
    standin: AnthropicStandin, body: dict[str, Any], key: str = KEY, **headers: str
) -> httpx.Response:
    return loopback.post(
        f"{standin.url}/v1/messages",
        json=body,
        headers={"x-api-key": key, "anthropic-version": "2023-06-01", **headers},
    )


def turn_body(**more: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": True,
        "system": [{"type": "text", "text": "You are the widget agent."}],
        "tools": [BASH, {"name": "mcp__github__get_file_contents", "input_schema": {}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Fix the bug"}]}],
        **more,
    }


def test_anthropic_turns_stream_a_tool_call_then_the_answer_and_record_what_was_asked() -> None:
    script: list[Turn] = [
        ToolCall("Bash", {"command": "git push origin fix"}),
        Answer("Pushed the fix."),
    ]
    with AnthropicStandin(script, api_key=KEY) as model:
        first = events(messages(model, turn_body()))
        names = [name for name, _ in first]
        assert names[:2] == ["message_start", "ping"]
        assert names[-2:] == ["message_delta", "message_stop"]
        start = dict(first)["content_block_start"]["content_block"]
        assert start["type"] == "tool_use" and start["name"] == "Bash"
        assert start["id"].startswith("toolu_") and start["input"] == {}
        partial = "".join(
            data["delta"]["partial_json"] for name, data in first if name == "content_block_delta"
        )
        assert json.loads(partial) == {"command": "git push origin fix"}
        delta = dict(first)["message_delta"]
        assert delta["delta"]["stop_reason"] == "tool_use"
        assert delta["usage"]["output_tokens"] >= 1
        usage = dict(first)["message_start"]["message"]["usage"]
        assert usage["input_tokens"] >= 1

        result = {"type": "tool_result", "tool_use_id": start["id"], "content": "pushed"}
        later = turn_body(
            messages=[
                {"role": "user", "content": "Fix the bug"},
                {"role": "assistant", "content": [{**start, "input": {"command": "x"}}]},
                {"role": "user", "content": [result]},
            ]
        )
        second = events(messages(model, later))
        text = "".join(
            data["delta"]["text"] for name, data in second if name == "content_block_delta"
        )
        assert text == "Pushed the fix."
        assert dict(second)["content_block_start"]["content_block"] == {"type": "text", "text": ""}
        assert dict(second)["message_delta"]["delta"]["stop_reason"] == "end_turn"

        turns = model.turns()
        assert [t.turn for t in turns] == [0, 1]
        assert turns[0].headers["x-api-key"] == KEY
        assert turns[0].tool_names == ["Bash", "mcp__github__get_file_contents"]
        assert model.system_text(turns[0]) == "You are the widget agent."
        assert model.user_texts(turns[0]) == ["Fix the bug"]
        assert model.tool_results(turns[1]) == ["pushed"]
        assert model.turns_taken == 2


def test_anthropic_side_calls_take_no_turn_and_a_finished_script_says_so() -> None:
    with AnthropicStandin([Answer("only turn")], api_key=KEY) as model:
        side = messages(model, {"model": "m", "max_tokens": 1, "messages": [], "stream": False})
        assert side.status_code == 200
        assert side.json()["content"][0]["type"] == "text"
        assert side.json()["stop_reason"] == "end_turn"
        counted = loopback.post(
            f"{model.url}/v1/messages/count_tokens", json=turn_body(), headers={"x-api-key": KEY}
        )
        assert counted.status_code == 200 and counted.json()["input_tokens"] >= 1
        listed = loopback.get(f"{model.url}/v1/models", headers={"x-api-key": KEY})
        assert [m["id"] for m in listed.json()["data"]] == ["standin-model"]
        hello = httpx.head(f"{model.url}/api/hello", headers={"x-api-key": KEY})
        assert hello.status_code == 200
        unknown = loopback.get(f"{model.url}/v1/files", headers={"x-api-key": KEY})
        assert unknown.status_code == 404
        assert unknown.json()["error"]["message"] == "the Anthropic stand-in has no GET /v1/files"
        assert model.turns_taken == 0

        # not streaming: one whole message
        whole = messages(model, turn_body(stream=False)).json()
        assert whole["content"] == [{"type": "text", "text": "only turn"}]
        past = events(messages(model, turn_body()))
        said = "".join(d["delta"]["text"] for n, d in past if n == "content_block_delta")
        assert said == SCRIPT_ENDED
        assert [r.path for r in model.requests] == [
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/models",
            "/api/hello",
            "/v1/files",
            "/v1/messages",
            "/v1/messages",
        ]
        assert [r.turn for r in model.requests] == [None, None, None, None, None, 0, 1]


def test_anthropic_refuses_a_wrong_key_as_the_api_does() -> None:
    with AnthropicStandin([Answer("never")], api_key=KEY) as model:
        refused = messages(model, turn_body(), key="sk-ant-wrong")
        assert refused.status_code == 401
        assert refused.json()["error"] == {
            "type": "authentication_error",
            "message": "invalid x-api-key",
        }
        assert "x-should-retry" not in refused.headers
        assert model.turns_taken == 0  # a refused request takes no turn
    with AnthropicStandin([Answer("never")], refuse_keys=True, should_retry=False) as model:
        refused = messages(model, turn_body(), key=model.api_key)
        assert refused.status_code == 401
        assert refused.headers["x-should-retry"] == "false"
        assert model.turns_taken == 0
        assert model.requests[0].headers["x-api-key"] == model.api_key


def responses(
    standin: OpenAIStandin, body: dict[str, Any], key: str = OPENAI_KEY
) -> httpx.Response:
    return loopback.post(
        f"{standin.url}/responses", json=body, headers={"Authorization": f"Bearer {key}"}
    )


def responses_body(**more: Any) -> dict[str, Any]:
    github = {
        "type": "namespace",
        "name": "mcp__github",
        "tools": [{"type": "function", "name": "get_file_contents", "parameters": {}}],
    }
    return {
        "model": "gpt-test",
        "stream": True,
        "instructions": "Base instructions.",
        "tools": [{"type": "function", "name": "exec_command", "parameters": {}}, github],
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "You are the widget agent."}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]},
        ],
        **more,
    }


def test_openai_turns_stream_function_calls_namespaced_or_not_then_the_answer() -> None:
    script: list[Turn] = [
        ToolCall("mcp__github__get_file_contents", {"path": "README.md"}),
        ToolCall("exec_command", {"cmd": "git push"}),
        Answer("Done."),
    ]
    with OpenAIStandin(script, api_key=OPENAI_KEY) as model:
        first = events(responses(model, responses_body()))
        names = [name for name, _ in first]
        assert names[:3] == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
        ]
        assert names[-2:] == ["response.output_item.done", "response.completed"]
        assert [d["sequence_number"] for _, d in first] == list(range(len(first)))
        call = dict(first)["response.output_item.done"]["item"]
        assert call["type"] == "function_call" and call["status"] == "completed"
        assert (call["namespace"], call["name"]) == ("mcp__github", "get_file_contents")
        assert json.loads(call["arguments"]) == {"path": "README.md"}
        deltas = "".join(
            d["delta"] for n, d in first if n == "response.function_call_arguments.delta"
        )
        assert deltas == call["arguments"]
        completed = dict(first)["response.completed"]["response"]
        assert completed["status"] == "completed" and completed["output"] == [call]
        assert completed["usage"]["total_tokens"] == (
            completed["usage"]["input_tokens"] + completed["usage"]["output_tokens"]
        )

        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "# hi"}
        second = events(
            responses(model, responses_body(input=[*responses_body()["input"], output]))
        )
        plain = dict(second)["response.output_item.done"]["item"]
        assert plain["name"] == "exec_command" and "namespace" not in plain

        third = events(responses(model, responses_body()))
        text = "".join(d["delta"] for n, d in third if n == "response.output_text.delta")
        assert text == "Done."
        message = dict(third)["response.output_item.done"]["item"]
        assert message["type"] == "message" and message["role"] == "assistant"
        assert message["content"] == [{"type": "output_text", "text": "Done.", "annotations": []}]

        turns = model.turns()
        assert turns[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
        assert turns[0].tool_names == ["exec_command", "mcp__github"]
        assert model.instructions(turns[0]) == "Base instructions.\nYou are the widget agent."
        assert model.user_texts(turns[0]) == ["Go"]
        assert model.tool_results(turns[1]) == ["# hi"]
        models = loopback.get(
            f"{model.url}/models", headers={"Authorization": f"Bearer {OPENAI_KEY}"}
        )
        assert models.json()["data"][0]["id"] == "standin-model"


@pytest.mark.parametrize("key", ["sk-proj-wrong-0123456789abcdef", "short"])
def test_openai_refuses_a_wrong_key_showing_only_its_ends(key: str) -> None:
    with OpenAIStandin([Answer("never")], api_key=OPENAI_KEY) as model:
        refused = responses(model, responses_body(), key=key)
        assert refused.status_code == 401
        error = refused.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_api_key")
        assert error["message"].startswith("Incorrect API key provided: ")
        assert key not in error["message"]
        with pytest.raises(TimeoutError, match=r"\['POST /v1/responses'\]"):
            model.wait_for(lambda r: r.path == "/v1/models", timeout=0.2)
        assert model.wait_for(lambda r: r.path == "/v1/responses", timeout=1).turn is None
