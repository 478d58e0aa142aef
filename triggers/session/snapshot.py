"""The setup snapshot cache key and its reuse window (the environments seed: setup, cache)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DEFAULT_TTL_SECONDS", "cache_files", "files_digest", "snapshot_key", "ttl_seconds"]

#: the seed's default reuse window when `setupCache` is absent: 7 days
DEFAULT_TTL_SECONDS = 7 * 86400

_TTL = re.compile(r"^([1-9][0-9]*)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def snapshot_key(
    environment: Mapping[str, Any],
    mounts: Sequence[Mapping[str, Any]],
    working_directory: str | None,
    files: str = "",
) -> str:
    """A hex digest of what the setup results depend on: the image build (image and steps),
    the setup commands with their `cache` objects, each mount (where it comes from, which ref,
    where it lands, how deep, with which auth), the working directory, and `files` (the
    `files_digest` of the `cache.files` contents).

    `environment` is the generated resource's `spec`; `mounts` the session's mounts (JSON).
    """
    material = {
        "image": environment.get("image"),
        "steps": list(environment.get("steps") or []),
        "setup": list(environment.get("setup") or []),
        "mounts": [
            {
                "url": m.get("url"),
                "mountPath": m.get("mountPath"),
                "ref": m.get("ref"),
                "depth": m.get("depth"),
                "auth": m.get("auth"),
                "capabilities": m.get("capabilities"),
            }
            for m in mounts
        ],
        "workingDirectory": working_directory,
        "files": files,
    }
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def cache_files(environment: Mapping[str, Any]) -> list[str]:
    """Every setup entry's `cache.files` (relative to the working directory), once each."""
    found: list[str] = []
    for entry in environment.get("setup") or []:
        cache = entry.get("cache") if isinstance(entry, Mapping) else None
        for name in (cache or {}).get("files") or []:
            if isinstance(name, str) and name not in found:
                found.append(name)
    return found


def files_digest(hashes: Mapping[str, str | None]) -> str:
    """One digest of the `cache.files` contents, given each file's sha256 (None: absent);
    '' when there are none."""
    if not hashes:
        return ""
    material = json.dumps(dict(sorted(hashes.items())), separators=(",", ":"))
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def ttl_seconds(environment: Mapping[str, Any]) -> int:
    """`setupCache.ttl` (`30m`, `24h`, `7d`) in seconds; the default when absent or unreadable
    (the compiler has already refused a malformed one)."""
    cache = environment.get("setupCache")
    ttl = cache.get("ttl") if isinstance(cache, Mapping) else None
    match = _TTL.match(ttl) if isinstance(ttl, str) else None
    if match is None:
        return DEFAULT_TTL_SECONDS
    return int(match.group(1)) * _UNIT[match.group(2)]
