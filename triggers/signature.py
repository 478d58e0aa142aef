"""The one HMAC-SHA256 body signature: GitHub's X-Hub-Signature-256, verified here (fail
closed), and hookspawn's own X-Hookspawn-Signature-256 on what it POSTs to a dispatch target,
signed the same way."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

PREFIX = "sha256="


def sign(body: bytes, secret: str) -> str:
    """`sha256=<hex HMAC-SHA256 of body keyed by secret>`: the header value GitHub sends for
    `body` under `secret`, and the one hookspawn sends with a dispatched session."""
    return PREFIX + _digest(body, secret).hex()


def _digest(body: bytes, secret: str) -> bytes:
    return hmac.new(secret.encode(), body, hashlib.sha256).digest()


def verify(body: bytes, header: str | None, secrets: Sequence[str]) -> bool:
    """True when `header` is `sha256=<hex>` and matches `body` under any of `secrets`.

    A missing header, any other prefix (GitHub's legacy `sha1=` included), a malformed
    digest, or no configured secret at all is a failure.
    https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
    """
    if not header or not secrets or not header.startswith(PREFIX):
        return False
    digest = header[len(PREFIX) :]
    if len(digest) != 64:
        return False
    try:
        given = bytes.fromhex(digest)
    except ValueError:
        return False
    matched = False
    for secret in secrets:
        expected = _digest(body, secret)
        # compare against every secret, so timing does not tell which one matched
        matched |= hmac.compare_digest(expected, given)
    return matched
