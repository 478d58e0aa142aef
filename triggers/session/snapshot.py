"""The setup snapshot cache key (the environments seed: setup, cache)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agents.environment_spec import EnvironmentSpec

__all__ = ["files_digest", "snapshot_key"]


def snapshot_key(
    environment: EnvironmentSpec,
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
        "image": environment.image.to_json(),
        "steps": list(environment.steps),
        "setup": [entry.to_json() for entry in environment.setup],
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


def files_digest(hashes: Mapping[str, str | None]) -> str:
    """One digest of the `cache.files` contents, given each file's sha256 (None: absent);
    '' when there are none."""
    if not hashes:
        return ""
    material = json.dumps(dict(sorted(hashes.items())), separators=(",", ":"))
    return hashlib.sha256(material.encode()).hexdigest()[:32]
