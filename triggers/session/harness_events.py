"""What a harness did, read from the JSON events it prints: Claude Code's `--output-format
stream-json` and Codex's `exec --json`. Pure: the runner feeds each line of the harness's
standard output to `EventReader.line` and writes the notes it answers into the session's log.

Claude Code: `system` (`init`: its version, model and tools; `api_retry`: a failed model
request it will retry), `assistant` (`message.content`: `text` and `tool_use`), `user`
(`tool_result`, `is_error`), `result` (`subtype`, `result`, `is_error`, `num_turns`,
`total_cost_usd`, `usage`). Codex: `thread.started`, `turn.started`, `item.started` and
`item.completed` (`agent_message`, `command_execution`, `mcp_tool_call`, `file_change`,
`error`, …), `turn.completed` (`usage`), `turn.failed`, `error`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RESULT_LIMIT",
    "EventReader",
    "Step",
    "Usage",
    "summarize_input",
    "timeline",
]

#: the most of the final answer kept on the session record (bytes of UTF-8)
RESULT_LIMIT = 16 * 1024
#: the most of a tool call's summary, a tool error or an answer a log line shows
_SUMMARY = 160
_ERROR = 500
_ANSWER = 2000


def _clip(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _clip_bytes(text: str, limit: int) -> str:
    data = text.encode()
    return text if len(data) <= limit else data[:limit].decode(errors="ignore")


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: the argument that says most about a call of these tools (Claude Code's own and Codex's)
_MAIN_ARGUMENT = ("command", "file_path", "pattern", "url", "query", "description")


def summarize_input(arguments: Any) -> str:
    """One line saying what a tool call was given: its main argument (a command, a path, a
    pattern) when it has one, else its arguments as `name=value`, clipped."""
    if not isinstance(arguments, Mapping):
        return _clip(_scalar(arguments), _SUMMARY) if arguments not in (None, "") else ""
    for name in _MAIN_ARGUMENT:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            return _clip(value, _SUMMARY)
    pairs = (f"{name}={_scalar(value)}" for name, value in arguments.items())
    return _clip(" ".join(pairs), _SUMMARY)


def _text_of(content: Any) -> str:
    """The text in a tool result's or message's `content` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
        )
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class Usage:
    """What the harness reported using: tokens in (cache reads and writes included) and
    out, model turns, and cost in US dollars where it says."""

    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    cost_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "turns": self.turns,
        }
        if self.cost_usd is not None:
            out["costUsd"] = self.cost_usd
        return out


#: words a harness uses when the model endpoint refused its key
_AUTH_WORDS = (
    "authentication_failed",
    "401 unauthorized",
    "invalid api key",
    "invalid x-api-key",
    "incorrect api key",
    "invalid_api_key",
)


def _auth_refusal(text: str) -> bool:
    low = text.lower()
    return any(word in low for word in _AUTH_WORDS)


@dataclass
class EventReader:
    """Reads one harness's events, line by line, into log notes and what the session record
    shows. `error`: what the harness reported failing (its own words); `auth_failure`: the
    model endpoint refused the key (the runner ends the session at once)."""

    harness: str
    version: str | None = None
    result: str | None = None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    #: the last error the harness printed, reported as failing or not (a retry)
    last_error: str | None = None
    auth_failure: str | None = None
    events: int = 0
    #: Claude Code's tool_use ids → tool names (a tool_result names only the id)
    _tools: dict[str, str] = field(default_factory=dict)
    #: Codex items already announced by item.started
    _started: set[str] = field(default_factory=set)

    def line(self, raw: bytes | str) -> list[str]:
        """The log notes for one line of the harness's standard output (none for a line
        that is not a JSON object: the runner logs it as output)."""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        try:
            event = json.loads(text)
        except ValueError:
            return []
        if not isinstance(event, dict):
            return []
        self.events += 1
        if self.harness == "codex":
            return self._codex(event)
        return self._claude(event)

    def _answer(self, text: str) -> list[str]:
        self.result = _clip_bytes(text, RESULT_LIMIT)
        return [f"answer: {_clip(text, _ANSWER)}"] if text.strip() else []

    # Claude Code

    def _claude(self, event: dict[str, Any]) -> list[str]:
        kind = event.get("type")
        if kind == "system":
            return self._claude_system(event)
        message = event.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
        if kind == "assistant":
            notes = []
            for block in blocks:
                if block.get("type") == "tool_use":
                    name = str(block.get("name") or "?")
                    self._tools[str(block.get("id"))] = name
                    summary = summarize_input(block.get("input"))
                    notes.append(f"tool: {name} {summary}".rstrip())
            error = event.get("error")
            if isinstance(error, str) and _auth_refusal(error):
                self.auth_failure = _clip(_text_of(content) or error, _ERROR)
            return notes
        if kind == "user":
            notes = []
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("is_error") is True:
                    name = self._tools.get(str(block.get("tool_use_id")), "?")
                    words = _clip(_text_of(block.get("content")), _ERROR)
                    notes.append(f"tool error: {name}: {words}")
            return notes
        if kind == "result":
            return self._claude_result(event)
        return []

    def _claude_system(self, event: dict[str, Any]) -> list[str]:
        subtype = event.get("subtype")
        if subtype == "init":
            version = event.get("claude_code_version")
            if isinstance(version, str):
                self.version = version
            tools = event.get("tools")
            servers = event.get("mcp_servers")
            mcp = ", ".join(
                f"{s.get('name')} {s.get('status')}"
                for s in (servers if isinstance(servers, list) else [])
                if isinstance(s, Mapping)
            )
            return [
                f"claude-code {self.version or '(version unknown)'}: model "
                f"{event.get('model') or '?'}, {len(tools) if isinstance(tools, list) else 0} "
                f"tools{f', MCP {mcp}' if mcp else ''}"
            ]
        if subtype == "api_retry":
            error = str(event.get("error") or "")
            status = event.get("error_status")
            if error == "authentication_failed" or status == 401:
                detail = error or "no detail"
                self.auth_failure = (
                    f"the model endpoint refused the key (HTTP {status or 401}, {detail})"
                )
                return [f"model request refused: {self.auth_failure}"]
            return [
                f"model request failed ({error or status or '?'}), retry "
                f"{event.get('attempt')} of {event.get('max_retries')}"
            ]
        return []

    def _claude_result(self, event: dict[str, Any]) -> list[str]:
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            self.usage.input_tokens = sum(
                _int(usage.get(name))
                for name in (
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
            self.usage.output_tokens = _int(usage.get("output_tokens"))
        self.usage.turns = _int(event.get("num_turns"))
        cost = event.get("total_cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.usage.cost_usd = float(cost)
        text = event.get("result")
        text = text if isinstance(text, str) else ""
        if event.get("is_error") is True or str(event.get("subtype", "success")) != "success":
            words = text or str(event.get("subtype") or "an error")
            errors = event.get("errors")
            if not text and isinstance(errors, list) and errors:
                words = "; ".join(str(e) for e in errors)
            self.error = self.last_error = _clip(words, _ERROR)
            if _auth_refusal(words):
                self.auth_failure = self.error
            return [f"harness error: {self.error}"]
        return self._answer(text)

    # Codex

    def _codex(self, event: dict[str, Any]) -> list[str]:
        kind = event.get("type")
        if kind == "thread.started":
            return [f"codex: thread {event.get('thread_id') or '?'} started"]
        if kind in ("item.started", "item.completed", "item.updated"):
            item = event.get("item")
            if isinstance(item, Mapping):
                return self._codex_item(kind, item)
            return []
        if kind == "turn.completed":
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                # cached_input_tokens are part of input_tokens in Codex's count
                self.usage.input_tokens += _int(usage.get("input_tokens"))
                self.usage.output_tokens += _int(usage.get("output_tokens"))
            self.usage.turns += 1
            return []
        if kind in ("turn.failed", "error"):
            error = event.get("error")
            words = (
                error.get("message")
                if isinstance(error, Mapping)
                else event.get("message") or error
            )
            text = _clip(str(words or kind), _ERROR)
            if _auth_refusal(text):
                self.auth_failure = text
            self.last_error = text
            if kind == "turn.failed":  # an `error` alone may be a retry Codex recovers from
                self.error = text
            return [f"harness error: {text}"]
        return []

    def _codex_item(self, kind: str, item: Mapping[str, Any]) -> list[str]:
        item_type = item.get("type")
        item_id = str(item.get("id"))
        if kind == "item.updated":
            return []
        if item_type in ("command_execution", "mcp_tool_call"):
            notes = []
            if item_id not in self._started:
                self._started.add(item_id)
                notes.append(self._codex_call(item))
            if kind == "item.completed":
                failure = self._codex_failure(item)
                if failure:
                    notes.append(failure)
            return notes
        if kind != "item.completed":
            return []
        if item_type == "agent_message":
            return self._answer(str(item.get("text") or ""))
        if item_type == "file_change":
            changes = item.get("changes")
            listed = ", ".join(
                f"{c.get('kind')} {c.get('path')}"
                for c in (changes if isinstance(changes, list) else [])
                if isinstance(c, Mapping)
            )
            return [f"tool: edit {_clip(listed, _SUMMARY)}".rstrip()]
        if item_type == "error":
            text = _clip(str(item.get("message") or "an error"), _ERROR)
            return [f"harness notice: {text}"]  # Codex goes on (a missing model's metadata)
        return []

    @staticmethod
    def _codex_call(item: Mapping[str, Any]) -> str:
        if item.get("type") == "command_execution":
            return f"tool: shell {_clip(str(item.get('command') or ''), _SUMMARY)}".rstrip()
        name = f"{item.get('server') or '?'}.{item.get('tool') or '?'}"
        return f"tool: {name} {summarize_input(item.get('arguments'))}".rstrip()

    @staticmethod
    def _codex_failure(item: Mapping[str, Any]) -> str | None:
        if item.get("type") == "command_execution":
            code = item.get("exit_code")
            if item.get("status") == "failed" or (isinstance(code, int) and code != 0):
                output = _clip(str(item.get("aggregated_output") or ""), _ERROR)
                return f"tool error: shell: exit status {code}{f': {output}' if output else ''}"
            return None
        error = item.get("error")
        result = item.get("result")
        name = f"{item.get('server') or '?'}.{item.get('tool') or '?'}"
        if isinstance(error, Mapping) and error.get("message"):
            return f"tool error: {name}: {_clip(str(error['message']), _ERROR)}"
        if isinstance(result, Mapping) and result.get("is_error") is True:
            words = _clip(_text_of(result.get("content")), _ERROR)
            return f"tool error: {name}: {words}"
        if item.get("status") == "failed":
            return f"tool error: {name}: failed"
        return None


@dataclass(frozen=True)
class Step:
    """One entry of a transcript's readable timeline: `kind` (`start`, `tool`, `tool error`,
    `text`, `answer`, `error`), a title and its detail."""

    kind: str
    title: str
    detail: str = ""


def timeline(harness: str, lines: Iterable[bytes | str]) -> list[Step]:
    """The transcript (the harness's raw events) as steps a person reads: each tool call with
    its input, each tool error, what the model said, and the answer."""
    steps: list[Step] = []
    reader = EventReader(harness)
    for raw in lines:
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        try:
            event = json.loads(text)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        steps += _extra_steps(harness, event)
        for note in reader.line(text):
            kind, _, rest = note.partition(": ")
            if kind in ("tool", "tool error", "answer", "harness error"):
                title, _, detail = rest.partition(" ") if kind == "tool" else (rest, "", "")
                steps.append(Step("error" if kind == "harness error" else kind, title, detail))
            else:
                steps.append(Step("start", note))
    return steps


def _extra_steps(harness: str, event: Mapping[str, Any]) -> list[Step]:
    """What the model said between tool calls (the log leaves it out)."""
    if harness == "codex":
        item = event.get("item")
        if (
            event.get("type") == "item.completed"
            and isinstance(item, Mapping)
            and item.get("type") == "reasoning"
        ):
            return [Step("text", "reasoning", str(item.get("text") or ""))]
        return []
    message = event.get("message")
    if event.get("type") != "assistant" or not isinstance(message, Mapping):
        return []
    content = message.get("content")
    return [
        Step("text", "says", str(block["text"]))
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, Mapping) and block.get("type") == "text" and block.get("text")
    ]
