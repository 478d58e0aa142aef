"""Model API stand-ins on 127.0.0.1 for the real harnesses: the Anthropic Messages API (what
Claude Code speaks) and the OpenAI Responses API (what Codex speaks), both streaming.

Real HTTP (a threaded `http.server`), so the real `claude` and `codex` run their whole stack
against them. Each is driven by a script of turns: every model request of the agent's loop
takes the next turn, which either calls a tool (by the name the harness offered in the
request's `tools`) or answers text. Every request is recorded (headers with the key, the tool
list, the system prompt, the messages) so tests can assert what the model saw; a stand-in can
refuse every key with the provider's own 401.

    with AnthropicStandin([ToolCall("Bash", {"command": "git push"}), Answer("done")]) as model:
        env = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": model.api_key}
        ...  # run claude -p
        assert "Bash" in model.turns()[0].tool_names

Requests that are not the agent's loop (Claude Code's title and quota side calls, which carry
no tools; token counting; model listing) are answered without taking a turn: see `is_turn`.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = [
    "SCRIPT_ENDED",
    "Answer",
    "AnthropicStandin",
    "ModelRequest",
    "OpenAIStandin",
    "ToolCall",
    "Turn",
]

#: what a script's end answers (a turn past the last one is a test's mistake, said plainly)
SCRIPT_ENDED = "The stand-in's script has no more turns."


@dataclass(frozen=True)
class ToolCall:
    """A turn that calls `name` (exactly as the harness offered it) with `arguments`."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """A turn that answers `text` and ends the agent's loop."""

    text: str


Turn = ToolCall | Answer


@dataclass(frozen=True)
class ModelRequest:
    """One request a harness made, as the stand-in received it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None
    #: the script's turn this request took (its index), or None when it took none
    turn: int | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return list(tools) if isinstance(tools, list) else []

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered to the model (both APIs put them at `name`)."""
        return [str(tool["name"]) for tool in self.tools if "name" in tool]


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


@dataclass
class _Answer:
    status: int
    body: Any = None  # JSON (a dict or a list), or None with `stream`
    stream: list[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)


class _ModelStandin:
    """The server and the record common to both APIs."""

    #: how the provider names itself in errors and the server header
    provider = "model"
    key_prefix = "sk-test-"

    def __init__(
        self,
        script: Sequence[Turn] = (),
        *,
        api_key: str | None = None,
        refuse_keys: bool = False,
        should_retry: bool = True,
        model: str = "standin-model",
    ) -> None:
        self.script: list[Turn] = list(script)
        self.api_key = api_key or f"{self.key_prefix}{secrets.token_hex(16)}"
        #: answer every request with the provider's 401, whatever the key
        self.refuse_keys = refuse_keys
        #: False: a refusal says `x-should-retry: false`, so the client gives up at once (the
        #: real APIs leave it out, and Claude Code then retries a 401 ten times)
        self.should_retry = should_retry
        self.model = model
        self.requests: list[ModelRequest] = []
        self._next_turn = 0
        self._lock = threading.Lock()
        #: woken on each recorded request (`wait_for`)
        self._arrived = threading.Condition(self._lock)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        handler = type("Handler", (_Handler,), {"standin": self})
        server = _Server(("127.0.0.1", 0), handler)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def address(self) -> str:
        """host:port, as srt's allowed domains list it."""
        if self._server is None:
            raise RuntimeError(f"the {self.provider} stand-in is not running")
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    # -- the record ----------------------------------------------------------------------------

    def turns(self) -> list[ModelRequest]:
        """The requests that took a turn of the script, in order."""
        with self._lock:
            return [r for r in self.requests if r.turn is not None]

    @property
    def turns_taken(self) -> int:
        with self._lock:
            return self._next_turn

    def wait_for(self, predicate: Callable[[ModelRequest], bool], timeout: float) -> ModelRequest:
        """The first recorded request `predicate` holds for, waiting up to `timeout` seconds;
        TimeoutError naming what arrived when none does."""
        with self._arrived:
            found = self._arrived.wait_for(
                lambda: next((r for r in self.requests if predicate(r)), None), timeout
            )
            if found is None:
                seen = [f"{r.method} {r.path}" for r in self.requests]
                raise TimeoutError(f"no such request to the {self.provider} stand-in: {seen}")
            return found

    # -- handling ------------------------------------------------------------------------------

    def _record(
        self, method: str, path: str, headers: dict[str, str], body: Any, takes_turn: bool
    ) -> tuple[ModelRequest, Turn | None]:
        with self._arrived:
            turn: Turn | None = None
            index: int | None = None
            if takes_turn:
                index = self._next_turn
                self._next_turn += 1
                turn = self.script[index] if index < len(self.script) else Answer(SCRIPT_ENDED)
            request = ModelRequest(method, path, headers, body, index)
            self.requests.append(request)
            self._arrived.notify_all()
            return request, turn

    def _handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Answer:
        path = urlsplit(target).path
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        accepted = not self.refuse_keys and self._key_ok(headers)
        # a refused request takes no turn: the script waits for the first accepted one
        request, turn = self._record(
            method, path, headers, body, accepted and self.is_turn(method, path, body)
        )
        if not accepted:
            given = headers.get("x-api-key") or headers.get("authorization", "")
            refused = self.refusal(given.removeprefix("Bearer "))
            if not self.should_retry:
                refused.headers["x-should-retry"] = "false"
            return refused
        return self.answer(request, turn)

    def is_turn(self, method: str, path: str, body: Any) -> bool:
        raise NotImplementedError

    def _key_ok(self, headers: Mapping[str, str]) -> bool:
        raise NotImplementedError

    def refusal(self, given: str) -> _Answer:
        """The provider's 401 for the key `given`."""
        raise NotImplementedError

    def answer(self, request: ModelRequest, turn: Turn | None) -> _Answer:
        raise NotImplementedError


def _ids(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


class AnthropicStandin(_ModelStandin):
    """The Anthropic Messages API: `POST /v1/messages` (streaming or not), token counting,
    model listing; the key in `x-api-key` (or a bearer token)."""

    provider = "Anthropic"
    key_prefix = "sk-ant-test-"

    @property
    def url(self) -> str:
        """The base URL, as ANTHROPIC_BASE_URL takes it (the client adds /v1/messages)."""
        return f"http://{self.address}"

    def is_turn(self, method: str, path: str, body: Any) -> bool:
        """A Messages request of the agent's loop: it offers tools. Claude Code's side calls
        (the quota check, a session title) offer none."""
        return (
            method == "POST"
            and path == "/v1/messages"
            and isinstance(body, dict)
            and bool(body.get("tools"))
        )

    def _key_ok(self, headers: Mapping[str, str]) -> bool:
        given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        return secrets.compare_digest(given.encode(), self.api_key.encode())

    def refusal(self, given: str) -> _Answer:
        return _Answer(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                "request_id": _ids("req_"),
            },
            headers={"request-id": _ids("req_")},
        )

    def answer(self, request: ModelRequest, turn: Turn | None) -> _Answer:
        path, body = request.path, request.body
        if request.method == "POST" and path == "/v1/messages/count_tokens":
            return _Answer(200, {"input_tokens": _token_estimate(body)})
        if request.method == "GET" and path.startswith("/v1/models"):
            return _Answer(200, self._models(path))
        if path == "/api/hello":  # Claude Code's reachability check (unless told to stay quiet)
            return _Answer(200, {})
        if request.method != "POST" or path != "/v1/messages":
            return _not_found(self.provider, request)
        if not isinstance(body, dict):
            return _Answer(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "body: not JSON"},
                },
            )
        if turn is None:  # a side call: a short text
            turn = Answer("Stand-in title")
        blocks: list[dict[str, Any]]
        if isinstance(turn, ToolCall):
            blocks = [{"type": "tool_use", "id": _ids("toolu_"), "name": turn.name}]
            stop_reason = "tool_use"
        else:
            blocks = [{"type": "text"}]
            stop_reason = "end_turn"
        usage = {
            "input_tokens": _token_estimate(body),
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        text = turn.text if isinstance(turn, Answer) else ""
        arguments = json.dumps(turn.arguments) if isinstance(turn, ToolCall) else ""
        output_tokens = max(1, len(text or arguments) // 4)
        message_id = _ids("msg_")
        model = str(body.get("model") or self.model)
        if not body.get("stream"):
            content: list[dict[str, Any]] = []
            for block in blocks:
                if block["type"] == "text":
                    content.append({"type": "text", "text": text})
                else:
                    content.append({**block, "input": dict(turn.arguments)})  # type: ignore[union-attr]
            return _Answer(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": output_tokens},
                },
            )
        events = [
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
            ),
            _sse("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(text)]
            else:
                start = {**block, "input": {}}
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in ["", *_pieces(arguments)]
                ]
            events.append(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            for delta in deltas:
                events.append(
                    _sse(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
            events.append(
                _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            )
        events += [
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        return _Answer(200, stream=events, headers={"request-id": _ids("req_")})

    def _models(self, path: str) -> dict[str, Any]:
        model = {
            "type": "model",
            "id": self.model,
            "display_name": "Stand-in",
            "created_at": "2026-01-01T00:00:00Z",
        }
        if path.rstrip("/") != "/v1/models":
            return model
        return {"data": [model], "has_more": False, "first_id": self.model, "last_id": self.model}

    # -- what the model saw ----------------------------------------------------------------------

    @staticmethod
    def system_text(request: ModelRequest) -> str:
        """The request's system prompt, its blocks joined."""
        system = request.body.get("system") if isinstance(request.body, dict) else None
        if isinstance(system, str):
            return system
        if isinstance(system, list):
            return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
        return ""

    @staticmethod
    def user_texts(request: ModelRequest) -> list[str]:
        """The text of every user message of the request."""
        return [text for _, text in _anthropic_blocks(request, "user", "text")]

    @staticmethod
    def tool_results(request: ModelRequest) -> list[str]:
        """The content of every tool result the request carries back, as text."""
        return [text for _, text in _anthropic_blocks(request, "user", "tool_result")]


def _anthropic_blocks(request: ModelRequest, role: str, kind: str) -> Iterator[tuple[str, str]]:
    messages = request.body.get("messages") if isinstance(request.body, dict) else None
    for message in messages or []:
        if message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            if kind == "text":
                yield kind, content
            continue
        for block in content or []:
            if block.get("type") != kind:
                continue
            inner = block.get("text") if kind == "text" else block.get("content")
            if isinstance(inner, list):
                inner = "\n".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
            yield kind, str(inner or "")


class OpenAIStandin(_ModelStandin):
    """The OpenAI Responses API: `POST /v1/responses` (streaming), model listing; the key as a
    bearer token."""

    provider = "OpenAI"
    key_prefix = "sk-proj-test-"

    @property
    def url(self) -> str:
        """The base URL, as a Codex model provider's `base_url` takes it (with /v1)."""
        return f"http://{self.address}/v1"

    def is_turn(self, method: str, path: str, body: Any) -> bool:
        return method == "POST" and path == "/v1/responses"

    def _key_ok(self, headers: Mapping[str, str]) -> bool:
        given = headers.get("authorization", "").removeprefix("Bearer ")
        return secrets.compare_digest(given.encode(), self.api_key.encode())

    def refusal(self, given: str) -> _Answer:
        # as OpenAI words it: the key masked but for its first eight and last four characters
        hidden = max(0, len(given) - 12)
        shown = f"{given[:8]}{'*' * hidden}{given[-4:]}" if hidden else "*" * len(given)
        return _Answer(
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {shown}. You can find your API "
                    "key at https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            headers={"x-request-id": _ids("req_")},
        )

    def answer(self, request: ModelRequest, turn: Turn | None) -> _Answer:
        path = request.path
        if request.method == "GET" and path.startswith("/v1/models"):
            return _Answer(200, self._models())
        if turn is None:
            return _not_found(self.provider, request)
        body = request.body if isinstance(request.body, dict) else {}
        response_id = _ids("resp_")
        model = str(body.get("model") or self.model)
        sequence = iter(range(1_000_000))

        def event(kind: str, **data: Any) -> bytes:
            return _sse(kind, {"type": kind, "sequence_number": next(sequence), **data})

        def response(status: str, output: list[dict[str, Any]], usage: Any) -> dict[str, Any]:
            return {
                "id": response_id,
                "object": "response",
                "created_at": 1_780_000_000,
                "status": status,
                "model": model,
                "output": output,
                "usage": usage,
                "error": None,
                "incomplete_details": None,
            }

        events = [
            event("response.created", response=response("in_progress", [], None)),
            event("response.in_progress", response=response("in_progress", [], None)),
        ]
        if isinstance(turn, ToolCall):
            arguments = json.dumps(turn.arguments)
            item_id, call_id = _ids("fc_"), _ids("call_")
            begun: dict[str, Any] = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "call_id": call_id,
                **_openai_name(turn.name, request.tools),
                "arguments": "",
            }
            done = {**begun, "status": "completed", "arguments": arguments}
            events.append(event("response.output_item.added", output_index=0, item=begun))
            for piece in _pieces(arguments):
                events.append(
                    event(
                        "response.function_call_arguments.delta",
                        item_id=item_id,
                        output_index=0,
                        delta=piece,
                    )
                )
            events.append(
                event(
                    "response.function_call_arguments.done",
                    item_id=item_id,
                    output_index=0,
                    arguments=arguments,
                )
            )
            produced = len(arguments)
        else:
            item_id = _ids("msg_")
            begun = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
            whole = {**part, "text": turn.text}
            done = {**begun, "status": "completed", "content": [whole]}
            events.append(event("response.output_item.added", output_index=0, item=begun))
            where = {"item_id": item_id, "output_index": 0, "content_index": 0}
            events.append(event("response.content_part.added", **where, part=part))
            for piece in _pieces(turn.text):
                events.append(event("response.output_text.delta", **where, delta=piece))
            events.append(event("response.output_text.done", **where, text=turn.text))
            events.append(event("response.content_part.done", **where, part=whole))
            produced = len(turn.text)
        events.append(event("response.output_item.done", output_index=0, item=done))
        input_tokens = _token_estimate(body)
        output_tokens = max(1, produced // 4)
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        events.append(event("response.completed", response=response("completed", [done], usage)))
        return _Answer(200, stream=events, headers={"x-request-id": _ids("req_")})

    def _models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "stand-in"}],
        }

    # -- what the model saw ----------------------------------------------------------------------

    @staticmethod
    def instructions(request: ModelRequest) -> str:
        """The request's instructions and every developer/system message, joined."""
        body = request.body if isinstance(request.body, dict) else {}
        parts = [str(body.get("instructions") or "")]
        parts += [text for role, text in _openai_texts(request) if role in ("developer", "system")]
        return "\n".join(parts)

    @staticmethod
    def user_texts(request: ModelRequest) -> list[str]:
        return [text for role, text in _openai_texts(request) if role == "user"]

    @staticmethod
    def tool_results(request: ModelRequest) -> list[str]:
        """The output of every function call the request carries back."""
        body = request.body if isinstance(request.body, dict) else {}
        found = []
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                found.append(output if isinstance(output, str) else json.dumps(output))
        return found


def _openai_name(name: str, tools: list[dict[str, Any]]) -> dict[str, str]:
    """A function call's `name`, and its `namespace` when `name` is `NAMESPACE__TOOL` for a
    namespace tool the request offered (Codex offers each MCP server's tools as one
    namespace, `mcp__SERVER`, holding the server's tools by their own names)."""
    for tool in tools:
        prefix = f"{tool.get('name')}__"
        if tool.get("type") == "namespace" and name.startswith(prefix):
            inner = name.removeprefix(prefix)
            if any(t.get("name") == inner for t in tool.get("tools") or []):
                return {"namespace": str(tool["name"]), "name": inner}
    return {"name": name}


def _openai_texts(request: ModelRequest) -> Iterator[tuple[str, str]]:
    body = request.body if isinstance(request.body, dict) else {}
    for item in body.get("input") or []:
        if not isinstance(item, dict) or item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            yield str(item.get("role")), content
            continue
        for part in content or []:
            if isinstance(part, dict) and "text" in part:
                yield str(item.get("role")), str(part["text"])


def _pieces(text: str, size: int = 24) -> list[str]:
    """`text` in the small deltas a streaming model sends."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _token_estimate(body: Any) -> int:
    """A stand-in's token count: about four characters a token of the whole request."""
    return max(1, len(json.dumps(body)) // 4) if body is not None else 1


def _not_found(provider: str, request: ModelRequest) -> _Answer:
    message = f"the {provider} stand-in has no {request.method} {request.path}"
    if provider == "Anthropic":
        return _Answer(
            404, {"type": "error", "error": {"type": "not_found_error", "message": message}}
        )
    return _Answer(404, {"error": {"message": message, "type": "invalid_request_error"}})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up is not an error worth printing."""


class _Handler(BaseHTTPRequestHandler):
    standin: _ModelStandin
    protocol_version = "HTTP/1.1"
    server_version = "ModelStandin/1"

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the stand-in's record is `requests`."""

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            raw = self._read_chunked()
        headers = {k.lower(): v for k, v in self.headers.items()}
        answer = self.standin._handle(self.command, self.path, headers, raw)
        try:
            self.send_response(answer.status, HTTPStatus(answer.status).phrase)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.stream is not None:
                payload = b"".join(answer.stream)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
            else:
                payload = json.dumps(answer.body).encode()
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _read_chunked(self) -> bytes:
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return body
            body += self.rfile.read(size)
            self.rfile.readline()
