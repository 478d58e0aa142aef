"""How one spawn ended: the outcome recorded with its delivery or answered to a start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ALREADY_EXISTED", "Outcome", "OutcomeKind"]

OutcomeKind = Literal["dispatched", "refused", "suppressed", "failed"]

#: the `details` key of a `dispatched` outcome whose session was there already
ALREADY_EXISTED = "alreadyExisted"


@dataclass(frozen=True)
class Outcome:
    """How one (agent, trigger) spawn — or one manual/agent start — ended."""

    agent: str
    outcome: OutcomeKind
    code: str | None
    message: str
    trigger: int | None = None
    trigger_key: str | None = None
    session_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    #: dispatched, and its session existed already (created by an earlier run or start)
    already_existed: bool = False

    @property
    def repeat(self) -> bool:
        """A `dispatched` outcome whose session was there already: counted as a repeat."""
        return self.outcome == "dispatched" and self.already_existed

    def to_json(self) -> dict[str, Any]:
        details = dict(self.details)
        if self.already_existed:
            details[ALREADY_EXISTED] = True
        return {
            "agent": self.agent,
            "trigger": self.trigger,
            "triggerKey": self.trigger_key,
            "outcome": self.outcome,
            "code": self.code,
            "message": self.message,
            "sessionId": self.session_id,
            "details": details,
        }
