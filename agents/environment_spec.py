"""The compiled environment, typed: what `environments` builds from an inline environment,
what a compiled agent and a session spec carry, and what the runner reads.

Its JSON is the generated resource as it has always been written (camelCase keys, `$secret`
references, a `setupCache.ttl` of `30m`/`24h`/`7d`): session records stored in that shape load
and write back unchanged. The reuse window's rule (its pattern and default) lives here alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "DEFAULT_SETUP_CACHE_TTL",
    "DEFAULT_TTL",
    "TTL_RE",
    "Approval",
    "BaseImage",
    "EnvValue",
    "EnvironmentResource",
    "EnvironmentSpec",
    "Image",
    "PresetImage",
    "Resources",
    "SecretRef",
    "SetupCache",
    "SetupEntry",
    "SetupEntryCache",
    "parse_ttl",
    "secret_refs",
]

#: a reuse window as written: a whole number of seconds, minutes, hours or days
TTL_RE = re.compile(r"[1-9][0-9]*(s|m|h|d)")
#: the reuse window when an environment writes no `setupCache`
DEFAULT_SETUP_CACHE_TTL = "7d"
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_ttl(text: str) -> timedelta:
    """`30m`, `24h`, `7d` as a duration; ValueError naming the text when it is not one."""
    if not TTL_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not a duration like 30m, 24h or 7d ([1-9][0-9]*(s|m|h|d))")
    return timedelta(**{_UNIT[text[-1]]: int(text[:-1])})


DEFAULT_TTL = parse_ttl(DEFAULT_SETUP_CACHE_TTL)


def _absent(value: object) -> bool:
    return value is None


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class SecretRef(_Model):
    """An env value taken from the secret store: `{"$secret": name, "optional": bool}`. A
    missing optional one leaves its variable out; a missing required one fails the session."""

    secret: str = Field(alias="$secret")
    optional: bool = False


#: an env value: a literal, or a secret reference
EnvValue = str | SecretRef


def secret_refs(layers: Iterable[Mapping[str, EnvValue]]) -> list[tuple[str, SecretRef]]:
    """Each (variable, reference) of the env layers that names a secret, in order."""
    return [
        (name, value)
        for layer in layers
        for name, value in layer.items()
        if isinstance(value, SecretRef)
    ]


class PresetImage(_Model):
    kind: Literal["preset"]
    name: str


class BaseImage(_Model):
    kind: Literal["base"]
    ref: str


Image = Annotated[PresetImage | BaseImage, Field(discriminator="kind")]


class SetupEntryCache(_Model):
    """A setup entry's `cache`: what its snapshot key also depends on (`files`, relative to the
    working directory) and what it keeps (`paths`, under the home)."""

    key: str
    files: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()


class SetupEntry(_Model):
    name: str
    commands: tuple[str, ...]
    cache: SetupEntryCache | None = Field(default=None, exclude_if=_absent)


class SetupCache(_Model):
    """`setupCache`: how long a setup snapshot may be reused. `ttl` is the duration; the text
    it was written as (`24h`, not `1d`) is what the JSON keeps."""

    written: str = Field(alias="ttl", pattern=rf"^{TTL_RE.pattern}$")

    @property
    def ttl(self) -> timedelta:
        return parse_ttl(self.written)


class Resources(_Model):
    """The sandbox's size; a limit left out is no limit."""

    cpu_count: int | None = Field(default=None, ge=1, exclude_if=_absent)
    memory_mb: int | None = Field(default=None, ge=128, alias="memoryMB", exclude_if=_absent)


Approval = Literal["bypass", "prompt"]


class EnvironmentSpec(_Model):
    """The environment's `spec`: its image and build steps, setup entries and their snapshot's
    reuse window, resources, env and approval mode."""

    image: Image
    base_image: str
    steps: tuple[str, ...] = ()
    setup: tuple[SetupEntry, ...] = ()
    #: absent only in specs compiled before the default was filled in
    setup_cache: SetupCache | None = Field(default=None, exclude_if=_absent)
    resources: Resources | None = Field(default=None, exclude_if=_absent)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    approval: Approval = "bypass"

    @property
    def snapshot_ttl(self) -> timedelta:
        """How long a setup snapshot may be reused (`setupCache.ttl`, else the default)."""
        return DEFAULT_TTL if self.setup_cache is None else self.setup_cache.ttl

    @property
    def cache_files(self) -> list[str]:
        """Every setup entry's `cache.files` (relative to the working directory), once each."""
        found: list[str] = []
        for entry in self.setup:
            for name in entry.cache.files if entry.cache is not None else ():
                if name not in found:
                    found.append(name)
        return found


class EnvironmentResource(_Model):
    """A generated environment resource: its name, labels, annotations and spec."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    spec: EnvironmentSpec
