"""The sample webhook payloads shipped in the package, for `hookspawn send --example NAME`."""

from __future__ import annotations

from pathlib import Path

from hookspawn.errors import HookspawnError

__all__ = ["PAYLOADS_DIR", "SampleNotFound", "event_of", "names", "path_of"]

#: package data: `EVENT.VARIANT.json` files (see the README.md beside them)
PAYLOADS_DIR = Path(__file__).resolve().parents[1] / "examples" / "payloads"


class SampleNotFound(HookspawnError, LookupError):
    """No sample payload of that name; the message lists the ones there are."""


def names() -> list[str]:
    """Every sample's name (`pull_request.opened`, …), sorted."""
    return sorted(path.name.removesuffix(".json") for path in PAYLOADS_DIR.glob("*.json"))


def path_of(name: str) -> Path:
    """The file of sample `name`."""
    if name in names():
        return PAYLOADS_DIR / f"{name}.json"
    raise SampleNotFound(f"no example {name!r}; the examples are: {', '.join(names())}")


def event_of(name: str) -> str:
    """The X-GitHub-Event a sample is sent as: its name up to the first dot."""
    return name.split(".", 1)[0]
