"""The dispatched session spec: what a session is created from. Never holds a token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer
from pydantic.alias_generators import to_camel

from agents.environment_spec import EnvironmentResource, EnvironmentSpec, EnvValue
from triggers.envelope import plain
from triggers.json_codec import dump_json


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def to_bytes(self) -> bytes:
        """The JSON document itself (serialised in pydantic-core, integers of any size kept)."""
        return self.model_dump_json(by_alias=True).encode()


class CommitAuthor(_Model):
    name: str
    email: str


class SessionMount(_Model):
    """One checkout. `url` is the address staging fetches (the mounts seed's resolution);
    `repository` is owner/name on GitHub (App auth and coverage use it); `git_permissions` is
    the scope of the mount's git credential, None when it gets none.
    `event_dependent`: the ref was rendered from the event (a ref template), so the event's
    author may have chosen it (setup snapshots are scoped by it)."""

    repository: str
    url: str
    mount_path: str
    ref: str | None
    depth: int
    auth: Literal["none", "githubApp"]
    capabilities: dict[str, str] | None = None
    commit_author: CommitAuthor | None = None
    installation_id: int | None = None
    git_permissions: dict[str, str] | None = None
    event_dependent: bool = False


class Requester(_Model):
    """The human a session acts for: a webhook sender of type User, or who started it by hand
    (`id` None: a manual start names only a login)."""

    login: str
    id: int | None = None


class BrokerAccess(_Model):
    """How the session reaches the credential broker. `credential` is present only
    in the spec handed over at dispatch; a stored spec never carries it (see `without_input`)."""

    url: str
    credential: str | None = Field(default=None, repr=False)


class SessionEnvironment(_Model):
    """The agent's environment: its name and generated resource, as the compiler built it."""

    name: str
    resource: EnvironmentResource

    @property
    def spec(self) -> EnvironmentSpec:
        """The resource's `spec` (image, steps, setup, setupCache, resources, env, approval)."""
        return self.resource.spec


class Origin(_Model):
    kind: Literal["trigger", "manual", "agent"]
    delivery_id: str | None = None
    parent_session_id: str | None = None
    depth: int = 0
    trigger: int | None = None
    trigger_key: str | None = None


class SessionSpec(_Model):
    """One session to create; `id` is the spawn id, so creating it twice is a no-op."""

    id: str
    agent: str
    harness: str
    environment: SessionEnvironment
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    mounts: list[SessionMount] = Field(default_factory=list)
    working_directory: str | None = None
    display_title: str | None = None
    initial_prompt: str | None = None
    message: str | None = None
    input: dict[str, Any] | None = None
    requester: Requester | None = None
    origin: Origin
    depth: int = 0
    created_at: str
    broker: BrokerAccess | None = None

    @field_serializer("input")
    def _plain_input(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # a trigger's input holds the payload as an envelope view (triggers.envelope)
        return None if value is None else plain(value)

    def to_bytes(self) -> bytes:
        """The JSON document. The session input (the whole event payload, plain JSON values)
        is written by orjson, which does it about ten times faster than pydantic-core does
        for an untyped dict; integers of any size stay exact either way."""
        if self.input is None:
            return super().to_bytes()
        rest = self.model_dump_json(by_alias=True, exclude={"input"}).encode()
        return b'%s,"input":%s}' % (rest[:-1], dump_json(self.input))

    def without_input(self) -> bytes:
        """The JSON document without its `input` member, nor the broker credential: what is
        stored (a session credential is handed over, never kept)."""
        return self.model_dump_json(
            by_alias=True, exclude={"input": True, "broker": {"credential"}}
        ).encode()

    def with_credential(self, credential: str) -> SessionSpec:
        """The spec to hand over, carrying the session's broker credential."""
        assert self.broker is not None
        return self.model_copy(
            update={"broker": BrokerAccess(url=self.broker.url, credential=credential)}
        )

    @property
    def input_from_delivery(self) -> tuple[str, str] | None:
        """(event, delivery id) when the input is `session_input` of a recorded delivery.

        Every trigger-spawned session's input is built that way (spawn_plan.plan_spawn), so it
        can be rebuilt from the delivery's recorded body.
        """
        if self.origin.kind != "trigger" or not self.input or not self.origin.delivery_id:
            return None
        payload = self.input.get("payload")
        github = payload.get("github") if isinstance(payload, Mapping) else None
        event = github.get("event") if isinstance(github, Mapping) else None
        if self.input.get("triggerEventId") != self.origin.delivery_id or not isinstance(
            event, str
        ):
            return None
        return event, self.origin.delivery_id


def session_json_schema() -> dict[str, Any]:
    """The JSON Schema of a session spec, as served at /schemas/session.json."""
    return SessionSpec.model_json_schema(by_alias=True)
