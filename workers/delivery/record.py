"""A delivery as the store records it: what intake hands over, the record read back, statuses."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from triggers.intake import DeliveryIdentity, ParsedDelivery, identity_of
from triggers.timestamps import iso_z

__all__ = ["FAILED", "PROCESSED", "QUEUED", "Delivery", "NewDelivery", "iso", "parse_record"]

QUEUED, PROCESSED, FAILED = "queued", "processed", "failed"


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return iso_z(ts)


@dataclass(frozen=True, slots=True)
class NewDelivery(DeliveryIdentity):
    """A delivery to record: its identity, its body and when it was received."""

    body: bytes
    received_at: float = field(default_factory=time.time)

    @classmethod
    def of(cls, parsed: ParsedDelivery) -> NewDelivery:
        """What intake records of a request it accepted: its identity, its JSON as body."""
        return cls(**identity_of(parsed), body=parsed.json)


@dataclass(frozen=True, slots=True)
class Delivery(DeliveryIdentity):
    """A delivery as its record reads back: its identity and where it is."""

    status: str
    received_at: float
    processed_at: float | None
    error: str | None
    runs: int
    #: claims of it by a worker so far, this one included (set by `DeliveryStore.claim`):
    #: 1 means no worker took it before, so none of its spawns can have happened yet
    claims: int = 0
    #: attempts since it was recorded or last replayed, this one included when claimed
    #: (bounded by the store's `max_attempts`)
    attempts: int = 0
    #: the connections generation when it was claimed (`keys.INSTALLATIONS_GENERATION`)
    connections_generation: bytes | None = None

    @property
    def timed_from(self) -> float:
        """Where its webhook → session latency starts: its receipt, in its first run; 0 (not
        timed) in a replay's, whose sessions waited on whoever replayed it, not on hookspawn."""
        return self.received_at if self.runs == 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "deliveryId": self.delivery_id,
            "event": self.event,
            "action": self.action,
            "repository": self.repository,
            "installationId": self.installation_id,
            "hookId": self.hook_id,
            "status": self.status,
            "receivedAt": iso(self.received_at),
            "processedAt": iso(self.processed_at),
            "error": self.error,
            "attempts": self.attempts,
        }


def _text(raw: Mapping[bytes, bytes], name: bytes) -> str | None:
    value = raw.get(name)
    return value.decode() if value else None


def parse_record(
    delivery_id: str,
    raw: Mapping[bytes, bytes],
    *,
    claimed: bool = False,
    generation: bytes | None = None,
) -> Delivery:
    """A record's fields as a Delivery; `claimed`: read by the claim that counted itself."""
    installation = _text(raw, b"installationId")
    processed = _text(raw, b"processedAt")
    return Delivery(
        delivery_id=delivery_id,
        event=_text(raw, b"event") or "",
        action=_text(raw, b"action"),
        repository=_text(raw, b"repository"),
        installation_id=int(installation) if installation else None,
        hook_id=_text(raw, b"hookId"),
        status=_text(raw, b"status") or QUEUED,
        received_at=float(_text(raw, b"receivedAt") or 0),
        processed_at=float(processed) if processed else None,
        error=_text(raw, b"error"),
        runs=int(_text(raw, b"runs") or 0),
        claims=int(_text(raw, b"claims") or 0) + (1 if claimed else 0),
        attempts=int(_text(raw, b"attempts") or 0) + (1 if claimed else 0),
        connections_generation=generation,
    )
