"""Turning one webhook request (headers + raw body) into a delivery to record: pure checks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import parse_qs

from triggers.body_fields import read_fields
from triggers.errors import (
    InvalidBody,
    InvalidHeader,
    InvalidSignature,
    PayloadTooLarge,
    UnsupportedContentType,
)
from triggers.signature import verify

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
EVENT_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
JSON_TYPES = {"application/json"}
FORM_TYPE = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class DeliveryIdentity:
    """A delivery as intake identifies it (its id and event headers) and reads it (three
    fields of its body): what its record keeps besides the body, and what the API shows.
    The one definition of these fields: what intake parses and what the store records and
    reads back (workers/delivery/record.py) extend it."""

    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    installation_id: int | None
    hook_id: str | None


@dataclass(frozen=True, slots=True)
class ParsedDelivery(DeliveryIdentity):
    """What intake keeps of a request it accepts."""

    json: bytes  # the JSON document itself (for form posts, the `payload` field)


IDENTITY_FIELDS = tuple(field.name for field in fields(DeliveryIdentity))


def identity_of(delivery: DeliveryIdentity) -> dict[str, Any]:
    """A delivery's identity fields, by name (to build another kind of delivery from it)."""
    return {name: getattr(delivery, name) for name in IDENTITY_FIELDS}


def check_size(content_length: str | None) -> None:
    if content_length is None:
        return
    try:
        length = int(content_length)
    except ValueError:
        raise InvalidHeader("Content-Length is not a number", header="Content-Length") from None
    if length > MAX_BODY:
        raise PayloadTooLarge(
            f"body of {length} bytes is over the 25 MB limit", limit=MAX_BODY, size=length
        )


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name.lower())
    if value is None or not value.strip():
        raise InvalidHeader(f"missing header {name}", header=name)
    return value.strip()


def _json_document(raw: bytes, media_type: str) -> bytes:
    if media_type in JSON_TYPES:
        return raw
    if media_type != FORM_TYPE:
        raise UnsupportedContentType(
            f"Content-Type {media_type or '(none)'} is not supported: "
            "use application/json or application/x-www-form-urlencoded",
            contentType=media_type,
        )
    try:
        form = parse_qs(raw.decode("ascii"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidBody(f"form body is malformed: {exc}") from None
    values = form.get("payload")
    if not values:
        raise InvalidBody("form body has no `payload` field")
    if len(values) > 1:
        raise InvalidBody("form body has more than one `payload` field")
    return values[0].encode("utf-8")


def parse_delivery(
    headers: Mapping[str, str], raw: bytes, secrets: Sequence[str]
) -> ParsedDelivery:
    """Check a request in the intake's order: size, signature, headers, content type, body.

    `headers` must have lower-case names.
    """
    if len(raw) > MAX_BODY:
        raise PayloadTooLarge("body is over the 25 MB limit", limit=MAX_BODY)
    # an empty secret is no secret: anyone can compute an HMAC under the empty key
    secrets = [secret for secret in secrets if secret.strip()]
    if not secrets:
        raise InvalidSignature("no webhook secret is configured: every delivery is refused")
    signature = headers.get("x-hub-signature-256")
    if not verify(raw, signature, secrets):
        if signature is None:
            reason = "missing X-Hub-Signature-256"
        elif not signature.startswith("sha256="):
            reason = "X-Hub-Signature-256 must start with sha256="
        else:
            reason = "X-Hub-Signature-256 does not match the body"
        raise InvalidSignature(reason, header="X-Hub-Signature-256")
    event = _header(headers, "X-GitHub-Event")
    if not EVENT_NAME.match(event):
        raise InvalidHeader(
            f"X-GitHub-Event {event[:80]!r} is not an event name", header="X-GitHub-Event"
        )
    delivery_id = _header(headers, "X-GitHub-Delivery")
    if not DELIVERY_ID.match(delivery_id):
        raise InvalidHeader(
            "X-GitHub-Delivery must be 1-64 characters of A-Z, a-z, 0-9 and -",
            header="X-GitHub-Delivery",
        )
    document = _json_document(raw, _media_type(headers.get("content-type")))
    fields = read_fields(document)
    hook_id = headers.get("x-github-hook-id")
    return ParsedDelivery(
        delivery_id=delivery_id,
        event=event,
        action=fields.action,
        repository=fields.repository,
        installation_id=fields.installation_id,
        hook_id=hook_id.strip()[:64] if hook_id else None,
        json=document,
    )
