"""A session's environment variables: the environment's and the agent's `env`, secrets resolved."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.environment_spec import EnvValue
from triggers.errors import TriggersError

__all__ = ["MissingSecret", "resolve_env"]


class MissingSecret(TriggersError):
    """A required `$secret` reference names a secret the store does not hold."""

    def __init__(self, variable: str, secret: str) -> None:
        super().__init__(
            f"env {variable}: the required secret {secret!r} is not in the secret store"
        )
        self.variable = variable
        self.secret = secret
        self.message = str(self)


def resolve_env(
    layers: Sequence[Mapping[str, EnvValue]], secrets: Mapping[str, str]
) -> dict[str, str]:
    """Merge `layers` (later wins: the environment's env, then the agent's) into plain values.

    A literal is kept; `{"$secret": name}` takes the secret's value; a missing secret marked
    `optional: true` leaves the variable out, a missing required one raises MissingSecret.
    """
    merged: dict[str, EnvValue] = {}
    for layer in layers:
        merged.update(layer)
    out: dict[str, str] = {}
    for variable, value in merged.items():
        if isinstance(value, str):
            out[variable] = value
        elif value.secret in secrets:
            out[variable] = secrets[value.secret]
        elif not value.optional:
            raise MissingSecret(variable, value.secret)
    return out
