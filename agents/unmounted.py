"""What a repository no mount names gets through an agent's GitHub tools, under
HOOKSPAWN_UNMOUNTED_CAPABILITIES: `check`'s line for each agent, and its warning when an agent
that pull requests from forks can start would write there.

The tool gate lets a session call a tool on a covered repository it did not mount when the
session sees the tool (some `githubApp` mount grants it, and the agent's tools allowlist names
it) and the setting grants it too (agents.github_tools.unmounted_capabilities). Git gets no
credential for such a repository under any setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agents.errors import Diagnostic
from agents.github_tools import LEVEL_RANK, TOOLS, unmounted_tools
from agents.model import CAPABILITY_FIELDS, CompiledAgent, CompileResult, Trigger
from agents.schema import join
from agents.trust import limits_who

__all__ = [
    "FORK_EVENTS",
    "Locate",
    "fork_triggers",
    "unmounted_check",
    "unmounted_json",
    "unmounted_levels",
    "unmounted_line",
]

#: events a pull request from a fork can cause, so that the fork's code may be what the
#: session checks out and runs (a comment on a pull request is an `issue_comment`)
FORK_EVENTS = (
    "pull_request",
    "pull_request_target",
    "pull_request_review",
    "pull_request_review_comment",
    "pull_request_review_thread",
    "issue_comment",
)
_KEY = {attr: key for attr, key, _ in CAPABILITY_FIELDS}
#: (agent, ("trigger", index)) → (file, line) of the trigger entry
Locate = Callable[[CompiledAgent, tuple[str, ...]], tuple[str, int]]


def _allowlist(agent: CompiledAgent) -> list[str] | None:
    names: list[str] | None = None
    for tool in agent.tools:
        if isinstance(tool, Mapping) and tool.get("kind") == "github" and "allow" in tool:
            names = (names or []) + [str(n) for n in tool.get("allow") or ()]
    return names


def unmounted_levels(agent: CompiledAgent, setting: str) -> dict[str, str]:
    """Authoring key (contents, pullRequests, …) → the highest level of a tool the agent's
    sessions may call on an unmounted repository; capabilities with no such tool left out."""
    mounts = [m.auth.capabilities for m in agent.mounts if m.auth.kind == "githubApp"]
    if not mounts:
        return {}
    found: dict[str, str] = {}
    for name in unmounted_tools(mounts, _allowlist(agent), setting):
        need = TOOLS[name]
        key = _KEY[need.capability]
        if LEVEL_RANK[need.level] > LEVEL_RANK[found.get(key, "none")]:
            found[key] = need.level
    return {key: found[key] for _, key, _ in CAPABILITY_FIELDS if key in found}


def fork_triggers(agent: CompiledAgent) -> list[Trigger]:
    """The agent's triggers a pull request from a fork can fire: an event of FORK_EVENTS with
    no filter that limits who (the author association, the sender, or forks left out)."""
    return [
        trigger
        for trigger in agent.triggers
        if trigger.event in FORK_EVENTS and not any(limits_who(f) for f in trigger.filters)
    ]


def unmounted_line(agent: CompiledAgent, setting: str) -> str:
    """`check`'s line: what a repository no mount names would get through the tools."""
    head = f"  unmounted repositories (HOOKSPAWN_UNMOUNTED_CAPABILITIES={setting}): "
    if not any(m.auth.kind == "githubApp" for m in agent.mounts):
        return head + "no GitHub tool (no githubApp mount)"
    levels = unmounted_levels(agent, setting)
    if not levels:
        return head + "no GitHub tool"
    shown = ", ".join(f"{key} {level}" for key, level in levels.items())
    return head + f"{shown} through the GitHub tools, where an installation covers them"


def unmounted_json(agents: Sequence[CompiledAgent], setting: str) -> dict[str, object]:
    return {
        "setting": setting,
        "agents": {
            agent.name: {
                "capabilities": unmounted_levels(agent, setting),
                "forkTriggers": [t.key for t in fork_triggers(agent)],
            }
            for agent in agents
        },
    }


def _at_line_one(agent: CompiledAgent, locate: tuple[str, ...]) -> tuple[str, int]:
    return agent.source_file, 1


def unmounted_check(
    setting: str, locate: Locate | None = None
) -> Callable[[CompileResult, Path], list[Diagnostic]]:
    """A check for `hookspawn check`: one warning per trigger a fork's pull request can fire,
    of an agent whose sessions could write on an unmounted repository under `setting`."""
    where = locate or _at_line_one

    def check(result: CompileResult, auto_dir: Path) -> list[Diagnostic]:
        found = []
        for agent in result.agents:
            writes = [
                k for k, level in unmounted_levels(agent, setting).items() if level == "write"
            ]
            if not writes:
                continue
            for trigger in fork_triggers(agent):
                position = agent.triggers.index(trigger)
                file, line = where(agent, ("trigger", str(position)))
                found.append(
                    Diagnostic(
                        file,
                        line,
                        join("triggers", trigger.index),
                        f"a pull request from a fork can start {agent.name} ({trigger.event!r}), "
                        f"and HOOKSPAWN_UNMOUNTED_CAPABILITIES={setting} lets its sessions write "
                        f"({', '.join(f'{k}: write' for k in writes)}) on every repository its "
                        "installations cover that no mount names: set it to read or none, or "
                        "filter the trigger on the author association",
                        severity="warning",
                    )
                )
        return found

    return check
