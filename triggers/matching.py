"""Trigger matching: an index by event name, and a decision per (agent, trigger).

Pure: the index is built once per compiled agent set and answers which triggers an envelope
fires, and for the others the first condition that failed. It never acts.

Conditions, checked in this order (the first that fails is reported):

1. event: `github.event` (X-GitHub-Event) equals the trigger's `event`.
2. action: the trigger's `actions` absent → any; else `github.action` must be one of them
   (an event without an action fails).
3. repository: `github.repository.fullName` against the trigger's `repositories` globs
   (case-insensitive); without globs, against the agent's mounts' GitHub repositories
   (case-insensitive, exact); an agent with no GitHub mount accepts any repository. When a
   rule applies, an event without a repository fails.
4. branch: only when the trigger has `branches` globs; the branch is found by
   `triggers.envelope_values.event_branch` (no branch found → fails).
5. bots: `github.sender.type == "Bot"` fires only triggers with `bots: true`.
6. filters, all of them, in order (paths as in templates: dotted keys, integer segments index
   lists; path lookups never touch Python attributes):
   - `equals`: strict JSON equality — numbers by value (`1 == 1.0`), but a boolean is not a
     number and a string is not a number; objects and lists compare element-wise. A missing
     path never equals anything (not even null).
   - `in`: the value equals (same rule) one of the listed values.
   - `matches`: a bounded regex search (`agents.regex_bound`) on a string value; a value that
     is missing or not a string does not match. A pattern RE2 refuses fails the filter.
   - `exists: true`: the path is present and not null; `exists: false`: missing or null.

A glob or pattern that `agents.globs` or `agents.regex_bound` refuses (the compiler should
reject it first) makes its condition fail, with the reason as the detail: fail closed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agents.globs import GlobError, GlobSet, compile_globs
from agents.model import CompiledAgent, Filter, Trigger
from agents.regex_bound import BoundedPattern, PatternError, compile_bounded
from triggers.envelope_values import MISSING, event_branch, json_equal, listed, lookup, show_value

__all__ = [
    "Candidate",
    "Condition",
    "Decision",
    "TriggerIndex",
]

Condition = Literal["event", "action", "repository", "branch", "bots", "filter"]

_FULL_NAME = ("repository", "fullName")


@dataclass(frozen=True)
class Candidate:
    """A trigger of an agent listening to an event."""

    agent: CompiledAgent
    trigger: Trigger


@dataclass(frozen=True)
class Decision:
    """Whether one (agent, trigger) fires for an envelope, or the first condition that failed."""

    agent: str
    trigger: int
    key: str
    name: str | None
    fires: bool
    failed: Condition | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "trigger": self.trigger,
            "key": self.key,
            "name": self.name,
            "fires": self.fires,
            "failed": self.failed,
            "detail": self.detail,
        }


class _FilterCheck:
    """One filter with its path split and its pattern compiled (or why it cannot be)."""

    __slots__ = ("error", "filter", "number", "options", "pattern", "segments")

    def __init__(self, number: int, filter: Filter) -> None:
        self.number = number
        self.filter = filter
        self.segments = tuple(filter.path.split("."))
        value = filter.value
        self.options = tuple(value) if isinstance(value, list | tuple) else (value,)
        self.pattern: BoundedPattern | None = None
        self.error: str | None = None
        if filter.op == "matches":
            try:
                self.pattern = compile_bounded(str(value))
            except PatternError as exc:
                self.error = str(exc)

    def holds(self, envelope: Mapping[str, Any]) -> bool:
        value = lookup(envelope, self.segments)
        op = self.filter.op
        if op == "exists":
            return (value is not MISSING and value is not None) is bool(self.filter.value)
        if value is MISSING:
            return False
        if op == "equals":
            return json_equal(value, self.filter.value)
        if op == "in":
            return any(json_equal(value, option) for option in self.options)
        return self.pattern is not None and isinstance(value, str) and self.pattern.search(value)

    def detail(self, envelope: Mapping[str, Any]) -> str:
        if self.error is not None:
            return f"filter {self.number} ({self.filter.path}): {self.error}"
        value = lookup(envelope, self.segments)
        return (
            f"filter {self.number}: {self.filter.path} {self.filter.op} "
            f"{show_value(self.filter.value)}, actual value {show_value(value)}"
        )


class _Rule:
    """A candidate with its conditions compiled, ready to decide on an envelope.

    `failed` finds the first failing condition without building any text (the hot path of
    `match`); `detail` describes that condition for decisions.
    """

    __slots__ = (
        "actions",
        "actions_listed",
        "branches",
        "candidate",
        "filters",
        "invalid",
        "mounted",
        "mounted_listed",
        "repositories",
    )

    def __init__(self, candidate: Candidate) -> None:
        self.candidate = candidate
        trigger = candidate.trigger
        self.actions = frozenset(trigger.actions) if trigger.actions is not None else None
        self.actions_listed = listed(trigger.actions or ())
        # A glob the compiler let through but this module refuses fails its condition.
        self.invalid: dict[Condition, str] = {}
        self.repositories: GlobSet | None = None
        self.mounted: frozenset[str] | None = None
        self.mounted_listed = ""
        if trigger.repositories is not None:
            try:
                self.repositories = compile_globs(trigger.repositories, ignore_case=True)
            except GlobError as exc:
                self.invalid["repository"] = str(exc)
        else:
            mounted = [m.github_repository for m in candidate.agent.mounts if m.github_repository]
            if mounted:
                self.mounted = frozenset(name.lower() for name in mounted)
                self.mounted_listed = listed(dict.fromkeys(mounted))
        self.branches: GlobSet | None = None
        if trigger.branches is not None:
            try:
                self.branches = compile_globs(trigger.branches)
            except GlobError as exc:
                self.invalid["branch"] = str(exc)
        self.filters = tuple(_FilterCheck(i, f) for i, f in enumerate(trigger.filters))

    def decide(self, event: _Event) -> Decision:
        failed = self.failed(event)
        trigger = self.candidate.trigger
        return Decision(
            agent=self.candidate.agent.name,
            trigger=trigger.index,
            key=trigger.key,
            name=trigger.name,
            fires=failed is None,
            failed=failed,
            detail=self.detail(failed, event) if failed else None,
        )

    def failed(self, event: _Event) -> Condition | None:
        """The first failing condition after `event` (the index already chose by event)."""
        if self.actions is not None:
            action = event.action()
            if not isinstance(action, str) or action not in self.actions:
                return "action"
        if not self._repository_ok(event):
            return "repository"
        if "branch" in self.invalid or (self.branches is not None and not self._branch_ok(event)):
            return "branch"
        if not self.candidate.trigger.bots and event.from_bot():
            return "bots"
        for check in self.filters:
            if not check.holds(event.envelope):
                return "filter"
        return None

    def _repository_ok(self, event: _Event) -> bool:
        if self.repositories is None and self.mounted is None:
            return "repository" not in self.invalid
        name = event.repository()
        if not isinstance(name, str):
            return False
        if self.repositories is not None:
            return self.repositories.match(name)
        return self.mounted is not None and name.lower() in self.mounted

    def _branch_ok(self, event: _Event) -> bool:
        branch, _ = event.branch()
        return branch is not None and self.branches is not None and self.branches.match(branch)

    def detail(self, failed: Condition, event: _Event) -> str:
        """What failed, with the values involved."""
        if failed in self.invalid:
            return self.invalid[failed]
        if failed == "action":
            action = event.action()
            if not isinstance(action, str):
                return f"the event has no action; wanted one of {self.actions_listed}"
            return f"action {action!r} is not one of {self.actions_listed}"
        if failed == "repository":
            return self._repository_detail(event)
        if failed == "branch":
            branch, where = event.branch()
            if branch is None:
                return f"the event has no branch: {where}"
            sources = listed(self.branches.sources if self.branches else ())
            return f"branch {branch!r} ({where}) matches none of {sources}"
        if failed == "bots":
            login = lookup(event.github, ("sender", "login"))
            return f"sender {show_value(login)} is a Bot and the trigger does not set bots: true"
        for check in self.filters:
            if not check.holds(event.envelope):
                return check.detail(event.envelope)
        return "no filter failed"  # unreachable while `failed` and `detail` agree

    def _repository_detail(self, event: _Event) -> str:
        name = event.repository()
        if not isinstance(name, str):
            return f"the event has no repository (github.repository.fullName is {show_value(name)})"
        if self.repositories is not None:
            return f"repository {name!r} matches none of {listed(self.repositories.sources)}"
        return (
            f"repository {name!r} is not one of the agent's mounted repositories "
            f"{self.mounted_listed} (the default when the trigger lists none)"
        )


_UNREAD: Any = object()


class _Event:
    """One envelope as the rules read it: each fact they share (action, repository, sender,
    branch) is looked up once, when a rule first needs it, not once per trigger."""

    __slots__ = ("_action", "_bot", "_branch", "_repository", "envelope", "github")

    def __init__(self, envelope: Mapping[str, Any], github: Mapping[str, Any]) -> None:
        self.envelope = envelope
        self.github = github
        self._action: Any = _UNREAD
        self._repository: Any = _UNREAD
        self._bot: bool | None = None
        self._branch: tuple[str | None, str] | None = None

    def action(self) -> Any:
        if self._action is _UNREAD:
            self._action = self.github.get("action")
        return self._action

    def repository(self) -> Any:
        """`github.repository.fullName`, or MISSING."""
        if self._repository is _UNREAD:
            self._repository = lookup(self.github, _FULL_NAME)
        return self._repository

    def from_bot(self) -> bool:
        if self._bot is None:
            self._bot = _is_bot(self.github)
        return self._bot

    def branch(self) -> tuple[str | None, str]:
        if self._branch is None:
            self._branch = event_branch(self.github)
        return self._branch


def _is_bot(github: Mapping[str, Any]) -> bool:
    sender = github.get("sender")
    return isinstance(sender, dict | Mapping) and sender.get("type") == "Bot"


def _github(envelope: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    github = envelope.get("github")
    if not isinstance(github, Mapping):
        return {}, None
    event = github.get("event")
    return github, event if isinstance(event, str) else None


class TriggerIndex:
    """Every trigger of a compiled agent set, indexed by event name.

    Built once per compiled set. `evaluate`/`match` look at the triggers listening to the
    envelope's event only, so their cost does not depend on triggers for other events.
    Candidates keep agent order, then trigger order.
    """

    def __init__(self, agents: Iterable[CompiledAgent]) -> None:
        self._rules: tuple[_Rule, ...] = tuple(
            _Rule(Candidate(agent, trigger)) for agent in agents for trigger in agent.triggers
        )
        by_event: dict[str, list[_Rule]] = {}
        for rule in self._rules:
            by_event.setdefault(rule.candidate.trigger.event, []).append(rule)
        self._by_event: dict[str, tuple[_Rule, ...]] = {
            event: tuple(rules) for event, rules in by_event.items()
        }
        self._candidates: dict[str, tuple[Candidate, ...]] = {
            event: tuple(rule.candidate for rule in rules) for event, rules in by_event.items()
        }

    @property
    def events(self) -> frozenset[str]:
        """The event names at least one trigger listens to."""
        return frozenset(self._by_event)

    def candidates(self, event: str) -> Sequence[Candidate]:
        """The triggers listening to `event` (one dict lookup)."""
        return self._candidates.get(event, ())

    def evaluate(self, envelope: Mapping[str, Any]) -> list[Decision]:
        """A decision for every trigger listening to the envelope's event."""
        github, event = _github(envelope)
        if event is None:
            return []
        facts = _Event(envelope, github)
        return [rule.decide(facts) for rule in self._by_event.get(event, ())]

    def match(self, envelope: Mapping[str, Any]) -> list[Candidate]:
        """The (agent, trigger) pairs the envelope fires, in index order."""
        github, event = _github(envelope)
        if event is None:
            return []
        facts = _Event(envelope, github)
        return [
            rule.candidate for rule in self._by_event.get(event, ()) if rule.failed(facts) is None
        ]

    def explain_all(self, envelope: Mapping[str, Any]) -> list[Decision]:
        """A decision for every trigger of every agent (the dry-run explain endpoint)."""
        github, event = _github(envelope)
        facts = _Event(envelope, github)
        decisions = []
        for rule in self._rules:
            trigger = rule.candidate.trigger
            if trigger.event == event:
                decisions.append(rule.decide(facts))
                continue
            decisions.append(
                Decision(
                    agent=rule.candidate.agent.name,
                    trigger=trigger.index,
                    key=trigger.key,
                    name=trigger.name,
                    fires=False,
                    failed="event",
                    detail=(
                        f"event {event!r} is not {trigger.event!r}"
                        if event is not None
                        else "the envelope has no github.event"
                    ),
                )
            )
        return decisions
