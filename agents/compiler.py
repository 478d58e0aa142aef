"""compile_dir: a .auto directory → imports resolved and merged → validated compiled agents."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from agents.environment_spec import EnvironmentResource, EnvValue
from agents.environments import (
    GeneratedEnvironment,
    SecretUse,
    compile_env_map,
    compile_environment,
)
from agents.errors import Loc
from agents.import_resolver import DIRECTIVES, FILE_PATH, AgentFiles, ImportResolver
from agents.model import CompiledAgent, CompileResult, Harness, Mount, PartialAgent, Trigger
from agents.mounts import compile_mounts, resolve_working_directory
from agents.schema import NAME_RE, Sink, opt_enum, opt_str, strict_map
from agents.source import YMap, YNode, YScalar, YSeq, describe, join
from agents.tools import compile_tools
from agents.triggerdefs import compile_triggers
from agents.trust import warn_untrusted

__all__ = ["compile_dir"]

_AGENT_KEYS = (
    "name",
    "harness",
    "environment",
    "mounts",
    "triggers",
    "workingDirectory",
    "systemPrompt",
    "tools",
    "env",
    *DIRECTIVES,
)
_NAME_RULE = "1-128 characters of [A-Za-z0-9_.-]"


def compile_dir(auto_dir: Path, *, secret_names: Collection[str] = ()) -> CompileResult:
    """Compile every ``agents/*.yaml`` of a ``.auto`` directory; all problems are reported."""
    sink = Sink()
    given = Path(auto_dir)
    if not given.is_dir():
        sink.error(Loc(str(given), 1), FILE_PATH, "not a directory (expected the .auto directory)")
        return _result(sink, [], {}, [])
    root = given.resolve()
    files = AgentFiles(root, given.name or root.name)
    environments_dir = root / "environments"
    if environments_dir.exists():
        sink.error(
            Loc(files.display(environments_dir), 1),
            "environments",
            "a .auto/environments/ directory is not supported: declare environments inline in "
            ".auto/agents/*.yaml, and share them as fragment imports under "
            ".auto/fragments/environments/",
        )
    agents_dir = root / "agents"
    paths = sorted(agents_dir.glob("*.yaml")) if agents_dir.is_dir() else []
    if agents_dir.is_dir():
        for stray in sorted(agents_dir.glob("*.yml")):
            sink.warning(
                Loc(files.display(stray), 1), FILE_PATH, "ignored: agent files end in .yaml"
            )
    resolver = ImportResolver(root, files, sink)
    pending = []
    partial: list[PartialAgent] = []
    declared: set[str] = set()  # inline environment names, even of agents that failed
    for path in paths:
        real = Path(os.path.realpath(path))  # never raises, even on a symlink loop
        if not real.is_relative_to(root) or not real.is_file():
            # not followed, not opened: named by its own path, never by where it leads
            resolver.refuse(path)
            continue
        doc = resolver.resolve(real, ())
        if doc is not None:
            declared.update(_declared_environment(doc))
            agent = _compile_agent(sink, doc, files.display(path), partial)
            if agent is not None:
                pending.append(agent)
    return _finish(sink, pending, set(secret_names), declared, partial)


def _declared_environment(doc: YMap) -> list[str]:
    env = doc.get("environment")
    name = env.get("name") if isinstance(env, YMap) else None
    if isinstance(name, YScalar) and isinstance(name.value, str):
        return [name.value.strip()]
    return []


@dataclass
class _Pending:
    """An agent whose own fields compiled; its environment is resolved across the set."""

    name: str
    name_loc: Loc
    harness: Harness
    file: str
    env_name: str
    env_loc: Loc
    env_resource: EnvironmentResource | None
    mounts: list[Mount]
    triggers: list[Trigger]
    working_directory: str | None
    system_prompt: str | None
    tools: list[dict[str, Any]]
    env: dict[str, EnvValue]
    secrets: list[SecretUse] = field(default_factory=list)


def _compile_agent(
    sink: Sink, doc: YMap, file: str, partial: list[PartialAgent]
) -> _Pending | None:
    """The agent's own fields compiled, every error of each reported; None when any failed,
    with what compiled whole added to `partial`."""
    before = sink.error_count
    strict_map(
        sink,
        doc,
        "",
        allowed=_AGENT_KEYS,
        required=("name", "harness", "environment"),
        what="the agent (after imports)",
    )
    name = opt_str(sink, doc.get("name"), "name", pattern=NAME_RE, rule=_NAME_RULE)
    harness = opt_enum(sink, doc.get("harness"), "harness", ("claude-code", "codex"))
    secrets: list[SecretUse] = []
    env_node = doc.get("environment")
    env_name, env_resource = _environment(sink, env_node, secrets)
    mounts_ok, mounts = compile_mounts(sink, doc.get("mounts"))
    before_triggers = sink.error_count
    triggers = compile_triggers(sink, doc.get("triggers"))
    triggers_ok = sink.error_count == before_triggers
    working_directory = None
    if mounts_ok:
        working_directory = resolve_working_directory(
            sink, doc.get("workingDirectory"), "workingDirectory", mounts
        )
    system_prompt = opt_str(sink, doc.get("systemPrompt"), "systemPrompt", non_empty=False)
    tools = compile_tools(sink, doc.get("tools"), mounts if mounts_ok else None)
    if mounts_ok and not triggers:
        _warn_unstartable(sink, doc.get("mounts"), mounts)
    warn_untrusted(sink, doc.get("triggers"), triggers, mounts)
    env = compile_env_map(sink, doc.get("env"), "env", secrets)
    if (
        env_resource is not None
        and harness == "claude-code"
        and env_resource.spec.approval == "prompt"
        and env_node is not None
    ):
        sink.warning(
            env_node.loc,
            "environment.approval",
            "approval: prompt has no effect with harness claude-code (it always bypasses)",
        )
    if sink.error_count > before or name is None or harness is None or env_name is None:
        partial.append(
            PartialAgent(
                name,
                file,
                tuple(mounts) if mounts_ok else (),
                tuple(triggers) if triggers_ok else (),
            )
        )
        return None
    name_node = doc.get("name")
    assert env_node is not None and name_node is not None
    return _Pending(
        name=name,
        name_loc=name_node.loc,
        harness=cast(Harness, harness),
        file=file,
        env_name=env_name,
        env_loc=env_node.loc,
        env_resource=env_resource,
        mounts=mounts,
        triggers=triggers,
        working_directory=working_directory,
        system_prompt=system_prompt,
        tools=tools,
        env=env,
        secrets=secrets,
    )


def _warn_unstartable(sink: Sink, node: YNode | None, mounts: list[Mount]) -> None:
    """An event-dependent agent with no trigger can never start: manual starts are refused."""
    if not isinstance(node, YSeq):
        return
    for index, mount in enumerate(mounts):
        if not mount.event_dependent:
            continue
        item = node.items[index]
        where = item.get("ref") if isinstance(item, YMap) else None
        sink.warning(
            (where or item).loc,
            join(join("mounts", index), "ref"),
            f"ref {mount.ref!r} needs an event, and the agent has no triggers: it can never "
            "start (manual and agent starts are refused with event_required)",
        )
        return


def _environment(
    sink: Sink, node: YNode | None, secrets: list[SecretUse]
) -> tuple[str | None, EnvironmentResource | None]:
    if node is None:
        return None, None
    if isinstance(node, YMap):
        resource = compile_environment(sink, node, "environment", secrets)
        return (resource.name, resource) if resource is not None else (None, None)
    if isinstance(node, YScalar) and isinstance(node.value, str):
        name = opt_str(sink, node, "environment", pattern=NAME_RE, rule=_NAME_RULE, strip=True)
        return name, None
    sink.error(
        node.loc,
        "environment",
        f"must be an inline environment or the name of one, got {describe(node)}",
    )
    return None, None


def _finish(
    sink: Sink,
    pending: list[_Pending],
    secret_names: set[str],
    declared: set[str],
    partial: list[PartialAgent],
) -> CompileResult:
    generated: dict[str, GeneratedEnvironment] = {}
    for agent in pending:
        if agent.env_resource is None:
            continue
        first = generated.get(agent.env_name)
        if first is None:
            generated[agent.env_name] = GeneratedEnvironment.first(agent.env_resource, agent.file)
            continue
        problem = first.absorb(agent.env_resource, agent.file)
        if problem is not None:
            sink.error(
                agent.env_loc,
                "environment",
                f"Conflicting generated resource: environment {agent.env_name!r}: {problem}",
            )
    environments = {name: entry.resource for name, entry in generated.items()}
    compiled: list[CompiledAgent] = []
    names: dict[str, str] = {}
    for agent in pending:
        before = sink.error_count
        if agent.name in names:
            sink.error(
                agent.name_loc,
                "name",
                f"agent name {agent.name!r} is already used by {names[agent.name]}",
            )
        names.setdefault(agent.name, agent.file)
        entry = environments.get(agent.env_name)
        if entry is None and agent.env_name not in declared:
            # (A declared one that failed to compile has its own errors already.)
            sink.error(
                agent.env_loc,
                "environment",
                f"no environment named {agent.env_name!r} is generated in this set: declare it "
                "inline (a fragment under fragments/environments/ is the way to share one)",
            )
        if secret_names:
            for use in agent.secrets:
                if use.name not in secret_names:
                    sink.error(
                        use.loc,
                        use.path,
                        f"secret {use.name!r} is not declared (HOOKSPAWN_SECRET_NAMES); "
                        "mark it optional: true if it may be absent",
                    )
        if sink.error_count > before or entry is None:
            partial.append(
                PartialAgent(agent.name, agent.file, tuple(agent.mounts), tuple(agent.triggers))
            )
            continue
        _warn_setup_skipped(sink, agent, entry)
        compiled.append(
            CompiledAgent(
                name=agent.name,
                harness=agent.harness,
                environment=agent.env_name,
                environment_resource=entry,
                source_file=agent.file,
                mounts=tuple(agent.mounts),
                triggers=tuple(agent.triggers),
                working_directory=agent.working_directory,
                system_prompt=agent.system_prompt,
                tools=tuple(agent.tools),
                env=agent.env,
            )
        )
    return _result(sink, compiled, environments, partial)


def _warn_setup_skipped(sink: Sink, agent: _Pending, entry: EnvironmentResource) -> None:
    if agent.working_directory is None and entry.spec.setup:
        sink.warning(
            agent.env_loc,
            "environment.setup",
            f"setup of environment {agent.env_name!r} never runs for agent {agent.name!r}: it "
            "has no working directory (no mounts and no absolute workingDirectory), and setup "
            "is skipped without one",
        )


def _result(
    sink: Sink,
    agents: list[CompiledAgent],
    environments: dict[str, EnvironmentResource],
    partial: list[PartialAgent],
) -> CompileResult:
    return CompileResult(
        agents=tuple(agents),
        environments=MappingProxyType(environments),
        errors=tuple(sink.errors),
        warnings=tuple(sink.warnings),
        partial=tuple(partial),
    )
