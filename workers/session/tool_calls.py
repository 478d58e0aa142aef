"""Executes a session's GitHub tool calls: the broker's gate, a token for that one call, GitHub.

The gate is the one `POST /sessions/{id}/github-tools/{tool}` runs (same codes, same audit
entry; a tool taking a `method` is gated by that method's need). The token it mints is for that
one call, scoped to the tool's permission on that repository; it never leaves this module and
is revoked at GitHub once the call is made. Every answer is a `ToolOutcome`: GitHub's answer as
text, or a refusal whose text starts with its code (`tool_not_granted: …`, `github_error: 404
…`). A tool the session does not see is `tool_not_granted` whatever its arguments; otherwise
the arguments that become part of a REST path are checked before the gate
(agents.github_tool_arguments): one that could leave the tool's own endpoint is
`invalid_argument: …`, audited as a refused call, and nothing is minted or sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.github_tool_arguments import InvalidToolArgument, check_path_arguments
from agents.github_tool_schemas import TOOL_SCHEMAS
from agents.github_tools import METHODS
from templating.errors import Error
from triggers.session.spec import SessionSpec
from workers.errors import WorkerError
from workers.github.tools import run_tool, token_client
from workers.session.broker import Broker

__all__ = ["ToolCalls", "ToolOutcome"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    is_error: bool = False


def _refusal(exc: Error) -> ToolOutcome:
    return ToolOutcome(f"{exc.code}: {exc.message}", is_error=True)


def _named(arguments: Mapping[str, Any]) -> str | None:
    """The repository as the call names it, for the audit of a refused call (None: not two
    short strings)."""
    owner, repo = arguments.get("owner"), arguments.get("repo")
    if isinstance(owner, str) and isinstance(repo, str) and len(owner) + len(repo) < 200:
        return f"{owner}/{repo}"
    return None


class ToolCalls:
    """The executor behind the session's MCP endpoint; sync (run it in a thread)."""

    def __init__(self, broker: Broker, api_url: str) -> None:
        self.broker = broker
        self.api_url = api_url

    def listed(self, spec: SessionSpec) -> list[str]:
        """The tools the session may call that hookspawn executes, in the table's order."""
        return [name for name in self.broker.tools(spec) if name in TOOL_SCHEMAS]

    def call(
        self, session_id: str, spec: SessionSpec, tool: str, arguments: Mapping[str, Any]
    ) -> ToolOutcome:
        if tool not in TOOL_SCHEMAS:
            return ToolOutcome(
                f"unknown_tool: hookspawn executes no GitHub tool named {tool!r}", is_error=True
            )
        if tool not in self.broker.tools(spec):
            # a tool the session does not see: the gate refuses it whatever its arguments
            try:
                self.broker.tool_token(session_id, spec, tool, _named(arguments) or "-")
            except WorkerError as exc:
                return _refusal(exc)
        try:
            repository = check_path_arguments(tool, arguments)
        except InvalidToolArgument as exc:
            self.broker.tool_refused(session_id, tool, _named(arguments), exc)
            return _refusal(exc)
        method = arguments.get("method") if tool in METHODS else None
        try:
            token = self.broker.tool_token(session_id, spec, tool, repository, method)
        except WorkerError as exc:
            return _refusal(exc)
        try:
            with token_client(token.token, self.api_url) as github:
                answer = run_tool(github, tool, repository, arguments)
        except (WorkerError, InvalidToolArgument) as exc:
            log.info("session %s: %s on %s: %s", session_id, tool, repository, exc.message)
            return _refusal(exc)
        finally:
            self.broker.release(session_id, token)
        if isinstance(answer, str):
            return ToolOutcome(answer)
        return ToolOutcome(json.dumps(answer, indent=None, separators=(",", ":")))
