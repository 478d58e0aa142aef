"""Template, ref, filter and branch paths of compiled agents checked against GitHub's webhook
events (`hookspawn check`): `check_event_paths` is the extra check
`hookspawn.cli.check.report.run_check` runs.

What a path is checked against: for each event a trigger listens to, and each action it lists
(every action of the event when it lists none), what the event carries for that action
(hookspawn.cli.check.event_schemas: githubkit's models and GitHub's example payloads).

A path is, for one (event, action):
- impossible: some segment names no field of its object (closed models) and no example payload
  carries it, indexes something that is not a list, or goes below a scalar → an error;
- uncertain: it can be absent — an optional (`Missing[...]`) or nullable field, a list index
  (the list may be shorter), a key of a free-form map, or a field only some alternatives of a
  union have → a warning;
- not a scalar (an object or a list) where a template needs a string, number or boolean → a
  warning.
A trigger that lists actions gets an error for every listed action the path cannot exist for;
one that lists none gets an error only when the path exists for no action at all, and a warning
naming the actions it cannot exist for.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agents.errors import Diagnostic
from agents.model import CompiledAgent, CompileResult, Filter, Mount, PartialAgent, Trigger
from hookspawn.cli.check.agent_lines import Locator
from hookspawn.cli.check.event_schemas import EventSchemas
from templating import Template
from triggers.envelope_values import event_branch

__all__ = ["branch_sources", "check_agents", "check_event_paths"]

Severity = Literal["error", "warning"]
#: an agent whose triggers are checked: compiled, or with errors elsewhere in its files
Checked = CompiledAgent | PartialAgent


# -- checking compiled agents ----------------------------------------------------------------


@dataclass(frozen=True)
class _Finding:
    """One problem, before it is located in a file."""

    agent: Checked
    path: str  # field path in the agent (triggers.0.displayTitle)
    locate: tuple[str, ...]  # how to find its line: ("trigger", i, field…) / ("mount", path)
    message: str
    severity: Severity


@dataclass
class _TriggerScope:
    """The (event, action) pairs one trigger listens to, or why it cannot be checked."""

    event: str
    actions: tuple[str | None, ...]
    listed: bool  # the trigger lists its actions


@dataclass
class _Report:
    schemas: EventSchemas
    findings: list[_Finding] = field(default_factory=list)

    def add(
        self,
        agent: Checked,
        path: str,
        locate: tuple[str, ...],
        message: str,
        severity: Severity,
    ) -> None:
        self.findings.append(_Finding(agent, path, locate, message, severity))


def check_agents(agents: Sequence[Checked], schemas: EventSchemas | None = None) -> list[_Finding]:
    """Every event-schema problem of the agents' triggers, in agent and trigger order."""
    report = _Report(schemas or EventSchemas.shared())
    for agent in agents:
        for trigger in agent.triggers:
            _check_trigger(report, agent, trigger)
    return report.findings


def check_event_paths(
    result: CompileResult, auto_dir: Path, *, locator: Locator | None = None
) -> list[Diagnostic]:
    """The `hookspawn.cli.check.report.run_check` hook: findings as diagnostics at their file
    and line, for the agents that failed to compile too (what of them compiled), so a file's
    every error is reported at once."""
    findings = check_agents([*result.agents, *result.partial])
    locator = locator or Locator(Path(auto_dir))  # one shared reads each file once
    out = []
    for f in findings:
        file, line = locator.where(f.agent, f.locate)
        out.append(Diagnostic(file, line, f.path, f.message, f.severity))
    return out


def _check_trigger(report: _Report, agent: Checked, trigger: Trigger) -> None:
    base = f"triggers.{trigger.index}"
    scope = _scope(report, agent, trigger)
    if scope is None:
        return
    if trigger.branches is not None:
        _check_branches(report, agent, trigger, scope)
    texts: tuple[tuple[str, Template | None], ...] = (
        ("displayTitle", trigger.display_title),
        ("initialPrompt", trigger.initial_prompt),
        ("message", trigger.message),
    )
    for name, template in texts:
        for token in template.tokens if template is not None else ():
            _check_path(
                report,
                agent,
                scope,
                tuple(str(s) for s in token.path),
                f"{base}.{name}",
                ("trigger", str(trigger.index), name),
                f"{name} token {token.text}",
                needs_scalar=True,
                null_renders=True,
                guards=guarded_paths(trigger),
                trigger_index=trigger.index,
            )
    for number, filter_ in enumerate(trigger.filters):
        _check_filter(report, agent, trigger, scope, number, filter_)
    for m, mount in enumerate(agent.mounts):
        _check_mount(report, agent, trigger, scope, m, mount)


def _scope(report: _Report, agent: Checked, trigger: Trigger) -> _TriggerScope | None:
    base = f"triggers.{trigger.index}"
    locate = ("trigger", str(trigger.index))
    schemas = report.schemas
    if trigger.event not in schemas.event_names:
        report.add(
            agent,
            f"{base}.event",
            (*locate, "event"),
            f"unknown GitHub webhook event {trigger.event!r}"
            + _close(trigger.event, schemas.event_names),
            "error",
        )
        return None
    known = schemas.actions(trigger.event)
    if trigger.actions is None:
        return _TriggerScope(trigger.event, known, listed=False)
    good: list[str | None] = []
    for n, action in enumerate(trigger.actions):
        if action in known or schemas.free_actions(trigger.event):
            good.append(action)
            continue
        if known == (None,):
            why = f"event {trigger.event!r} has no actions: drop `actions`"
        else:
            names = ", ".join(a for a in known if a)
            why = f"unknown action {action!r} for event {trigger.event!r} (one of {names})"
        report.add(agent, f"{base}.actions.{n}", (*locate, "actions"), why, "error")
    return _TriggerScope(trigger.event, tuple(good), listed=True) if good else None


def _check_branches(
    report: _Report, agent: Checked, trigger: Trigger, scope: _TriggerScope
) -> None:
    sources = branch_sources(scope.event)
    impossible = []
    for source in sources:
        verdicts = [report.schemas.verdict(scope.event, a, source) for a in scope.actions]
        if not any(v.possible for v in verdicts):
            impossible.append("github." + ".".join(source))
    if impossible:
        report.add(
            agent,
            f"triggers.{trigger.index}.branches",
            ("trigger", str(trigger.index), "branches"),
            f"event {scope.event!r} carries no branch (branches are read from "
            f"{', '.join(impossible)}, which it does not have): drop `branches` or filter on "
            "another field",
            "error",
        )


def _check_filter(
    report: _Report,
    agent: Checked,
    trigger: Trigger,
    scope: _TriggerScope,
    number: int,
    filter_: Filter,
) -> None:
    segments = tuple(filter_.path.split("."))
    if segments[0] != "github":
        return  # the compiler requires github.…; nothing to add
    _check_path(
        report,
        agent,
        scope,
        segments,
        f"triggers.{trigger.index}.filters.{number}.path",
        ("trigger", str(trigger.index), "filters", str(number), "path"),
        f"filter {number} path {filter_.path}",
        needs_scalar=filter_.op == "matches",
        absence_ok=filter_.op == "exists",
        # a filter that holds only for a value (a guard) is meant to fail on null
        null_renders=filter_.path
        in guarded_paths(dataclasses.replace(trigger, filters=(filter_,))),
        in_filter=True,
    )


def _check_mount(
    report: _Report,
    agent: Checked,
    trigger: Trigger,
    scope: _TriggerScope,
    index: int,
    mount: Mount,
) -> None:
    template = mount.ref_template
    for token in template.tokens if template is not None else ():
        path = tuple(str(s) for s in token.path)
        if path[0] != "payload":
            continue  # triggerEventId always exists
        _check_path(
            report,
            agent,
            scope,
            path[1:],
            f"mounts.{index}.ref",
            ("mount", mount.mount_path),
            f"ref token {token.text} (for trigger {trigger.index}, {trigger.event})",
            needs_scalar=True,
            guards=guarded_paths(trigger),
            trigger_index=trigger.index,
        )


def _check_path(
    report: _Report,
    agent: Checked,
    scope: _TriggerScope,
    segments: tuple[str, ...],
    path: str,
    locate: tuple[str, ...],
    what: str,
    *,
    needs_scalar: bool,
    absence_ok: bool = False,
    null_renders: bool = False,
    guards: frozenset[str] = frozenset(),
    trigger_index: int = 0,
    in_filter: bool = False,
) -> None:
    """One path (starting at `github`) against every (event, action) of a trigger's scope.

    A template path that may be null or absent passes when a filter of the trigger requires
    it present and not null (`guards`); a text template (`null_renders`) also takes a path
    that may only be null (a null on the day refuses that spawn, recorded and explained)."""
    if not segments or segments[0] != "github":
        report.add(
            agent, path, locate, f"{what}: the payload has only `github` at its root", "error"
        )
        return
    below = segments[1:]
    verdicts = {a: report.schemas.verdict(scope.event, a, below) for a in scope.actions}
    never = [a for a, v in verdicts.items() if not v.possible]
    possible = [v for v in verdicts.values() if v.possible]
    if never and (scope.listed or not possible):
        first = verdicts[never[0]]
        report.add(
            agent,
            path,
            locate,
            f"{what} cannot exist in {_for(scope.event, never)}: {first.why}",
            "error",
        )
        return
    if never:
        report.add(
            agent,
            path,
            locate,
            f"{what} is absent in {_for(scope.event, never)} ({verdicts[never[0]].why}); "
            "list the actions it exists for",
            "warning",
        )
        return
    uncertain = next((v for v in possible if not v.certain and v.absent), None)
    if uncertain is None and not null_renders:
        uncertain = next((v for v in possible if not v.certain), None)
    if uncertain is not None and not absence_ok and ".".join(segments) not in guards:
        consequence = "the filter fails"
        if needs_scalar and not in_filter:
            consequence = (
                "the spawn is refused when it is; it passes with the filter "
                f"{{path: {'.'.join(segments)}, exists: true}} on trigger {trigger_index}"
            )
            if not null_renders:
                consequence += " (a ref cannot render null empty, a text template can)"
        report.add(
            agent,
            path,
            locate,
            f"{what} may be {'absent or null' if uncertain.absent else 'null'} in {scope.event} "
            f"({uncertain.why}); {consequence}",
            "warning",
        )
        return
    if needs_scalar and any(v.scalar is False for v in possible):
        report.add(
            agent,
            path,
            locate,
            f"{what} is an object or a list in {scope.event}, not a string, number or boolean",
            "warning",
        )


def guarded_paths(trigger: Trigger) -> frozenset[str]:
    """The paths a filter of the trigger requires present and not null: `exists: true`,
    `equals` or `in` with no null among the values, `matches` (strings only)."""
    found = set()
    for filter_ in trigger.filters:
        op, value = filter_.op, filter_.value
        if (
            (op == "exists" and value is True)
            or op == "matches"
            or (op == "equals" and value is not None)
            or (op == "in" and isinstance(value, list) and value and None not in value)
        ):
            found.add(filter_.path)
    return frozenset(found)


def _for(event: str, actions: Sequence[str | None]) -> str:
    named = [a for a in actions if a]
    if not named:
        return f"event {event!r}"
    return f"{event} {'action' if len(named) == 1 else 'actions'} {', '.join(named)}"


def _close(name: str, known: frozenset[str]) -> str:
    squashed = name.replace("_", "")
    for candidate in sorted(known):
        if candidate.replace("_", "") == squashed or candidate.rstrip("s") == name.rstrip("s"):
            return f" (did you mean {candidate!r}?)"
    return ""


# -- where a branch comes from (triggers.envelope_values.event_branch) -------------------------


class _Probe(Mapping[str, Any]):
    """Records the envelope paths `event_branch` looks at (any value compares equal)."""

    def __init__(self, seen: list[tuple[str, ...]], path: tuple[str, ...], event: str | None):
        self._seen, self._path, self._event = seen, path, event

    def get(self, key: str, default: Any = None) -> Any:
        if self._event is not None and key == "event":
            return self._event
        path = (*self._path, key)
        self._seen[:] = [p for p in self._seen if p != path[:-1]]
        self._seen.append(path)
        return _Probe(self._seen, path, None)

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, str)

    __hash__ = None  # type: ignore[assignment]


@functools.lru_cache(maxsize=256)
def branch_sources(event: str) -> tuple[tuple[str, ...], ...]:
    """The envelope paths (below `github`) that `envelope_values.event_branch` reads a branch from.

    Asked of `event_branch` itself with a recording probe, so the two never disagree.
    """
    seen: list[tuple[str, ...]] = []
    event_branch(_Probe(seen, (), event))
    return tuple(seen)
