"""The agents package's exception base and the diagnostics a compile run reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from templating.errors import Error

__all__ = ["AgentsError", "Diagnostic", "Loc", "RuleError", "SourceError"]


class AgentsError(Error):
    """Base of every error the agent-file compiler raises on purpose."""

    code = "agent_error"


@dataclass(frozen=True, slots=True)
class Loc:
    """Where a value was written: a display file name and a 1-based line."""

    file: str
    line: int


class RuleError(AgentsError, ValueError):
    """A trigger rule (glob, filter pattern) that cannot be used."""


class SourceError(AgentsError):
    """A file that cannot be read as a safe YAML agent document."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.loc.file}:{self.loc.line}: {self.message}"


@dataclass(frozen=True)
class Diagnostic:
    """One error or warning, at the file and line the offending value was written."""

    file: str
    line: int
    path: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
        }
