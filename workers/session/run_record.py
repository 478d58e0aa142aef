"""A run record, read: how a local runner runs one session (workers/session/runs.py writes it).

Its fields are text in a Redis hash: the failure, the harness and its usage JSON objects, each
status's time ISO 8601; `parse_run` is where they are read, into a `SessionRun`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from triggers.timestamps import iso_z, parse_iso
from workers.errors import SessionRecordInvalid
from workers.session.status import SessionStatus

__all__ = ["TIME_ORDER", "Failure", "HarnessUsage", "HarnessView", "SessionRun", "parse_run"]


class Failure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    message: str


class HarnessView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="claude-code, codex, or custom (HOOKSPAWN_HARNESS_COMMAND)")
    version: str | None = Field(None, description="the program's version, when known")
    skipped: str | None = Field(None, description="why the harness did not run, when it did not")


class HarnessUsage(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    input_tokens: int = Field(description="tokens read, cache reads and writes included")
    output_tokens: int
    turns: int = Field(description="model turns")
    cost_usd: float | None = Field(None, description="in US dollars, where the harness says")


#: the order a run moves through its times (`ended` last), for times at the same instant
TIME_ORDER = (*(status.value for status in SessionStatus), "ended")


@dataclass(frozen=True, slots=True)
class SessionRun:
    """A run record, read: how a local runner runs one session. Its times are each status's
    (and `ended`'s) moment, as datetimes."""

    status: SessionStatus
    failure: Failure | None = None
    #: the session root on the host
    workspace: str | None = None
    snapshot_key: str | None = None
    snapshot_scope: str | None = None
    #: restored, saved or missed
    snapshot: str | None = None
    #: the harness as it ran (its name and version), or why it was skipped
    harness: HarnessView | None = None
    result: str | None = None
    usage: HarnessUsage | None = None
    #: when it entered each status (`queued`, `staging`, …) and when it `ended`
    times: Mapping[str, datetime] = field(default_factory=dict)
    #: the runner holding it (once one took it)
    owner: str | None = None
    #: a cancel was asked of its runner
    cancel_asked: bool = False

    @property
    def ended_at(self) -> datetime | None:
        return self.times.get("ended")

    @property
    def updated_at(self) -> datetime | None:
        """Its latest time: when it last moved."""
        return max(self.times.values(), default=None)

    def ordered_times(self) -> list[tuple[str, datetime]]:
        """Its times, earliest first (at the same instant, in the order it moves)."""

        def rank(item: tuple[str, datetime]) -> tuple[datetime, int]:
            name, at = item
            return at, TIME_ORDER.index(name) if name in TIME_ORDER else len(TIME_ORDER)

        return sorted(self.times.items(), key=rank)

    def to_json(self) -> dict[str, Any]:
        """The run's fields of GET /sessions/{id} (`harness` over the spec's harness name
        once the run has one; each time as it was written)."""
        harness = self.harness.model_dump(exclude_unset=True) if self.harness else None
        return {
            **({"harness": harness} if harness else {}),
            "status": self.status.value,
            "failure": self.failure.model_dump() if self.failure else None,
            "workspace": self.workspace,
            "snapshotKey": self.snapshot_key,
            "snapshotScope": self.snapshot_scope,
            "snapshot": self.snapshot,
            "harnessRun": harness,
            "result": self.result,
            "usage": (
                self.usage.model_dump(by_alias=True, exclude_unset=True) if self.usage else None
            ),
            "times": {name: iso_z(at, "milliseconds") for name, at in self.times.items()},
        }


def parse_run(session_id: str, raw: Mapping[bytes, bytes]) -> SessionRun:
    """A run record's fields as a SessionRun; SessionRecordInvalid, naming the field, for one
    that does not read as a run record."""
    record = {k.decode(): v.decode() for k, v in raw.items()}
    where = "status"
    try:
        status = SessionStatus(record["status"])
        where = "failure"
        failure = Failure.model_validate_json(record["failure"]) if "failure" in record else None
        where = "harness"
        harness = (
            HarnessView.model_validate_json(record["harness"]) if "harness" in record else None
        )
        where = "usage"
        usage = HarnessUsage.model_validate_json(record["usage"]) if "usage" in record else None
        times: dict[str, datetime] = {}
        for name, value in record.items():
            if name.endswith("At"):
                where = name
                times[name[: -len("At")]] = parse_iso(value)
    except (KeyError, ValueError, ValidationError) as exc:
        raise SessionRecordInvalid(
            f"session {session_id}: its run record's {where} does not read: {_reason(exc)}",
            sessionId=session_id,
            field=where,
        ) from exc
    return SessionRun(
        status=status,
        failure=failure,
        workspace=record.get("workspace"),
        snapshot_key=record.get("snapshotKey"),
        snapshot_scope=record.get("snapshotScope"),
        snapshot=record.get("snapshot"),
        harness=harness,
        result=record.get("result"),
        usage=usage,
        times=times,
        owner=record.get("owner"),
        cancel_asked=record.get("cancel") == "1",
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    if isinstance(exc, KeyError):
        return "missing"
    return str(exc)
