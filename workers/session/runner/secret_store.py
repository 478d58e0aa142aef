"""The local secret store `$secret` env references resolve from: HOOKSPAWN_SECRETS_FILE."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["load_secrets"]


def load_secrets(path: Path | None) -> dict[str, str]:
    """The file's JSON object of secret name → string value; empty when no file is set.
    Raises ValueError naming the file when it cannot be read or is not such an object."""
    if path is None:
        return {}
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"HOOKSPAWN_SECRETS_FILE {path}: cannot read it as JSON: {exc}") from None
    if not isinstance(document, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in document.items()
    ):
        raise ValueError(
            f"HOOKSPAWN_SECRETS_FILE {path}: must be a JSON object of name → string value"
        )
    return document
