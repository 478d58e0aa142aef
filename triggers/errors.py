"""The triggers package's exception family: why a webhook delivery was turned away."""

from __future__ import annotations

from templating.errors import Error


class TriggersError(Error):
    """Base of every error the triggers package raises on purpose."""

    code = "invalid_request"


class IntakeError(TriggersError):
    """A delivery refused at intake; `code` and `message` go to the caller as they are."""


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
