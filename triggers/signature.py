"""X-Hub-Signature-256 verification: HMAC-SHA256 over the raw body, fail closed."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

PREFIX = "sha256="


def sign(body: bytes, secret: str) -> str:
    """The header value GitHub sends for `body` under `secret`."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


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
        expected = hmac.new(secret.encode(), body, hashlib.sha256).digest()
        # compare against every secret, so timing does not tell which one matched
        matched |= hmac.compare_digest(expected, given)
    return matched
