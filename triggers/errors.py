"""The triggers package's exception family: why a webhook delivery was turned away."""

from __future__ import annotations

from typing import Any


class TriggersError(Exception):
    """Base of every error the triggers package raises on purpose."""


class IntakeError(TriggersError):
    """A delivery refused at intake; `code` and `message` go to the caller as they are."""

    code = "invalid_request"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details


class PayloadTooLarge(IntakeError):
    code = "payload_too_large"


class InvalidSignature(IntakeError):
    code = "invalid_signature"


class InvalidHeader(IntakeError):
    code = "invalid_header"


class UnsupportedContentType(IntakeError):
    code = "unsupported_content_type"


class InvalidBody(IntakeError):
    code = "invalid_body"
