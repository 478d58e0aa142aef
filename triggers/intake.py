"""Turning one webhook request (headers + raw body) into a delivery to record: pure checks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson

from triggers.errors import (
    InvalidBody,
    InvalidHeader,
    InvalidSignature,
    PayloadTooLarge,
    UnsupportedContentType,
)
from triggers.json_codec import TooDeep, check_depth
from triggers.signature import verify

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
EVENT_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
JSON_TYPES = {"application/json"}
FORM_TYPE = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class ParsedDelivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    installation_id: int | None
    hook_id: str | None
    json: bytes  # the JSON document itself (for form posts, the `payload` field)


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


def _parse_json(document: bytes) -> dict[str, Any]:
    # orjson refuses invalid UTF-8 itself, so the separate UTF-8 check (a second pass over
    # the body) only runs to name the problem once parsing has failed
    try:
        body = orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        try:
            document.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise InvalidBody(f"body is not UTF-8: byte {bad.start} is invalid") from None
        raise InvalidBody(f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidBody(f"body is JSON {type(body).__name__}, not an object")
    try:
        check_depth(document, body)
    except TooDeep as exc:
        raise InvalidBody(f"body is {exc}", limit=exc.limit) from None
    return body


def _installation_id(body: Mapping[str, Any]) -> int | None:
    installation = body.get("installation")
    if isinstance(installation, dict):
        value = installation.get("id")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _repository(body: Mapping[str, Any]) -> str | None:
    repository = body.get("repository")
    if isinstance(repository, dict) and isinstance(repository.get("full_name"), str):
        return str(repository["full_name"])
    return None


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
    body = _parse_json(document)
    action = body.get("action")
    hook_id = headers.get("x-github-hook-id")
    return ParsedDelivery(
        delivery_id=delivery_id,
        event=event,
        action=action if isinstance(action, str) else None,
        repository=_repository(body),
        installation_id=_installation_id(body),
        hook_id=hook_id.strip()[:64] if hook_id else None,
        json=document,
    )
