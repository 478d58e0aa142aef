"""The compiled agent model read by the spawn pipeline and the HTTP API (camelCase to_json)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.environment_spec import EnvironmentResource, EnvValue
from agents.errors import Diagnostic
from templating import Template

__all__ = [
    "Auth",
    "Capabilities",
    "CapabilityLevel",
    "CompileResult",
    "CompiledAgent",
    "Filter",
    "FilterOp",
    "Harness",
    "Mount",
    "PartialAgent",
    "Trigger",
]

Harness = Literal["claude-code", "codex"]
CapabilityLevel = Literal["none", "read", "write"]
FilterOp = Literal["equals", "in", "matches", "exists"]

# Capability attribute -> (JSON / authoring key, installation-token permission or None).
CAPABILITY_FIELDS: tuple[tuple[str, str, str | None], ...] = (
    ("contents", "contents", "contents"),
    ("pull_requests", "pullRequests", "pull_requests"),
    ("issues", "issues", "issues"),
    ("checks", "checks", "checks"),
    ("actions", "actions", "actions"),
    ("workflows", "workflows", "workflows"),
    ("secrets", "secrets", "secrets"),
    ("merge", "merge", None),
)


@dataclass(frozen=True)
class Capabilities:
    """A mount's GitHub grant; each field left out of the file takes its own default."""

    contents: CapabilityLevel = "write"
    pull_requests: CapabilityLevel = "write"
    issues: CapabilityLevel = "write"
    checks: CapabilityLevel = "read"
    actions: CapabilityLevel = "read"
    workflows: CapabilityLevel = "none"
    secrets: CapabilityLevel = "none"
    merge: Literal["none", "write"] = "none"
    #: the authoring keys the file wrote; the others come from the defaults above (shown by
    #: `check` and `explain`, never part of a grant's identity)
    written: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @property
    def defaulted(self) -> tuple[str, ...]:
        """The authoring keys (contents, pullRequests, …) that take their default."""
        return tuple(key for _, key, _ in CAPABILITY_FIELDS if key not in self.written)

    def token_permissions(self) -> dict[str, str]:
        """The installation-token permission body."""
        body: dict[str, str] = {}
        for attr, _, permission in CAPABILITY_FIELDS:
            level = getattr(self, attr)
            if permission is None or level == "none":
                continue
            if attr == "workflows" and level != "write":
                continue  # GitHub grants workflows only as write
            body[permission] = level
        body["metadata"] = "read"
        return body

    def git_permissions(self) -> dict[str, str] | None:
        """The git credential scope, or None when the mount gets no git credential."""
        if self.contents == "none":
            return None
        body: dict[str, str] = {"contents": self.contents, "metadata": "read"}
        if self.workflows == "write":
            body["workflows"] = "write"
        return body

    def to_json(self) -> dict[str, str]:
        return {key: getattr(self, attr) for attr, key, _ in CAPABILITY_FIELDS}


@dataclass(frozen=True)
class Auth:
    kind: Literal["none", "githubApp"] = "none"
    installation_id: str | None = None
    commit_author: Mapping[str, str] | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "installationId": self.installation_id,
            "commitAuthor": dict(self.commit_author) if self.commit_author else None,
            "capabilities": self.capabilities.to_json(),
            # which of them the file left to the defaults (none apply without githubApp)
            "defaultCapabilities": (
                list(self.capabilities.defaulted) if self.kind == "githubApp" else []
            ),
        }


@dataclass(frozen=True)
class Mount:
    repository: str
    mount_path: str
    github_repository: str | None = None
    ref: str | None = None
    ref_template: Template | None = None
    depth: int = 1
    auth: Auth = field(default_factory=Auth)
    kind: Literal["git"] = "git"

    @property
    def url(self) -> str:
        """The address staging fetches (mounts seed): a bare owner/repo is on github.com over
        https; a full https:// or git@ address is used as written."""
        if self.repository == self.github_repository:
            return f"https://github.com/{self.repository}.git"
        return self.repository

    @property
    def event_dependent(self) -> bool:
        return self.ref_template is not None and bool(self.ref_template.tokens)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "repository": self.repository,
            "url": self.url,
            "githubRepository": self.github_repository,
            "mountPath": self.mount_path,
            "ref": self.ref,
            "depth": self.depth,
            "auth": self.auth.to_json(),
            "eventDependent": self.event_dependent,
        }


@dataclass(frozen=True)
class Filter:
    path: str
    op: FilterOp
    value: Any
    pattern: re.Pattern[str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, self.op: self.value}


@dataclass(frozen=True)
class Trigger:
    index: int
    key: str
    event: str
    actions: tuple[str, ...] | None = None
    repositories: tuple[str, ...] | None = None
    branches: tuple[str, ...] | None = None
    filters: tuple[Filter, ...] = ()
    name: str | None = None
    bots: bool = False
    display_title: Template | None = None
    initial_prompt: Template | None = None
    message: Template | None = None
    kind: Literal["github"] = "github"

    def definition(self) -> dict[str, Any]:
        """The trigger as written (defaults filled in), without its position or key."""
        return {
            "kind": self.kind,
            "event": self.event,
            "actions": list(self.actions) if self.actions is not None else None,
            "repositories": list(self.repositories) if self.repositories is not None else None,
            "branches": list(self.branches) if self.branches is not None else None,
            "filters": [f.to_json() for f in self.filters],
            "name": self.name,
            "bots": self.bots,
            "displayTitle": _source(self.display_title),
            "initialPrompt": _source(self.initial_prompt),
            "message": _source(self.message),
        }

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "key": self.key, **self.definition()}


def _source(template: Template | None) -> str | None:
    return template.source if template is not None else None


@dataclass(frozen=True)
class CompiledAgent:
    name: str
    harness: Harness
    environment: str
    environment_resource: EnvironmentResource
    source_file: str
    mounts: tuple[Mount, ...] = ()
    triggers: tuple[Trigger, ...] = ()
    working_directory: str | None = None
    system_prompt: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    env: dict[str, EnvValue] = field(default_factory=dict)

    @property
    def event_dependent_mounts(self) -> tuple[Mount, ...]:
        return tuple(mount for mount in self.mounts if mount.event_dependent)

    @property
    def event_dependent(self) -> bool:
        return any(mount.event_dependent for mount in self.mounts)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "harness": self.harness,
            "environment": self.environment,
            "environmentResource": self.environment_resource.to_json(),
            "mounts": [mount.to_json() for mount in self.mounts],
            "triggers": [trigger.to_json() for trigger in self.triggers],
            "workingDirectory": self.working_directory,
            "systemPrompt": self.system_prompt,
            "tools": [dict(tool) for tool in self.tools],
            "env": {name: _env_json(value) for name, value in self.env.items()},
            "eventDependent": self.event_dependent,
            "sourceFile": self.source_file,
        }


def _env_json(value: EnvValue) -> str | dict[str, Any]:
    return value if isinstance(value, str) else value.to_json()


@dataclass(frozen=True)
class PartialAgent:
    """An agent file with errors, with what of it compiled whole: its triggers when every one
    did, its mounts when every one did (else none), so the checks beyond compiling (the event
    paths of `hookspawn check`) report on them in the same run as the errors."""

    name: str | None
    source_file: str
    mounts: tuple[Mount, ...] = ()
    triggers: tuple[Trigger, ...] = ()


@dataclass(frozen=True)
class CompileResult:
    agents: tuple[CompiledAgent, ...]
    environments: Mapping[str, EnvironmentResource]
    errors: tuple[Diagnostic, ...]
    warnings: tuple[Diagnostic, ...]
    #: the agent files that failed, with what of them compiled (never loaded or run)
    partial: tuple[PartialAgent, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    def agent(self, name: str) -> CompiledAgent | None:
        for agent in self.agents:
            if agent.name == name:
                return agent
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "agents": [agent.to_json() for agent in self.agents],
            "environments": {name: env.to_json() for name, env in self.environments.items()},
            "errors": [d.to_json() for d in self.errors],
            "warnings": [d.to_json() for d in self.warnings],
        }
