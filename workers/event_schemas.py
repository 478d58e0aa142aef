"""Template and filter paths checked against GitHub's webhook event schemas (`hookspawn check`).

An edge module: the schemas are githubkit's typed webhook models (pydantic), imported only for
the events the agents listen to (importing all of them costs seconds and hundreds of MB), never
by the pure core. `check_event_paths` is the extra check `agents.report.run_check` runs.

What a path is checked against: for each event a trigger listens to, and each action it lists
(every action of the event when it lists none), the event's model for that action. Envelope keys
are the models' JSON names (field aliases, else field names) in lowerCamelCase (SPEC §4);
`github.event` and `github.deliveryId` always exist (and `triggerEventId` in refs).

A path is, for one (event, action):
- impossible: some segment names no field of its object (closed models), indexes something
  that is not a list, or goes below a scalar → an error;
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

import datetime as _dt
import enum
import functools
import importlib
import logging
import threading
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from agents.errors import Diagnostic, SourceError
from agents.model import CompiledAgent, CompileResult, Filter, Mount, Trigger
from agents.mounts import normalize_mount_path
from agents.source import YMap, YNode, YScalar, YSeq, load_document, to_plain
from templating import Template
from triggers.envelope import camel
from triggers.matching import event_branch
from workers.event_paths import ExamplePaths

__all__ = [
    "EventSchemas",
    "PathVerdict",
    "branch_sources",
    "check_agents",
    "check_event_paths",
]

log = logging.getLogger(__name__)

Severity = Literal["error", "warning"]

#: envelope keys hookspawn adds to every event (SPEC §4)
_ALWAYS = frozenset({"event", "deliveryId"})
_SCALARS: tuple[type, ...] = (str, int, float, bool, _dt.datetime, _dt.date, _dt.time, enum.Enum)
_MAX_IMPORT_DEPTH = 16


# -- path verdicts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PathVerdict:
    """What one path is in one schema: possible at all, always there, and a scalar or not.

    `why` says where it became impossible or uncertain (a segment and the reason).
    `scalar` is None when it depends (union alternatives differ, or the value is free-form).
    """

    possible: bool
    certain: bool = True
    scalar: bool | None = True
    why: str = ""

    def uncertain(self, why: str) -> PathVerdict:
        if not self.possible or not self.certain:
            return self
        return PathVerdict(True, False, self.scalar, why)


_IMPOSSIBLE = PathVerdict(False, False, None)
_FREE = PathVerdict(True, False, None, "the value is free-form")


def _never(why: str) -> PathVerdict:
    return PathVerdict(False, False, None, why)


def _where(prefix: str, segments: Sequence[str], upto: int) -> str:
    return ".".join([prefix, *segments[: upto + 1]]) if prefix else ".".join(segments[: upto + 1])


class _Walker:
    """Walks type annotations of pydantic models along a path of envelope keys."""

    def __init__(self) -> None:
        self._keys: dict[type[BaseModel], dict[str, Any]] = {}

    def keys(self, model: type[BaseModel]) -> dict[str, Any]:
        """The model's fields by envelope key: camel(JSON name) → annotation."""
        found = self._keys.get(model)
        if found is None:
            found = {
                camel(info.alias or name): info.annotation
                for name, info in model.model_fields.items()
            }
            self._keys[model] = found
        return found

    def walk(self, tp: Any, segments: Sequence[str], i: int, prefix: str) -> PathVerdict:
        """The verdict for `segments[i:]` below a value of type `tp`."""
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if origin in (typing.Union, types.UnionType):
            return self.union(typing.get_args(tp), segments, i, prefix)
        if origin is Literal or _is_scalar(tp):
            if i == len(segments):
                return PathVerdict(True)
            return _never(f"{_where(prefix, segments, i - 1)} is a {_scalar_name(tp)}")
        if i == len(segments):
            return PathVerdict(True, True, False) if tp is not Any else _FREE
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
            return self._index(tp, segments, i, prefix)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self._field(tp, segments, i, prefix)
        # dict[...], Any, object: free-form, anything may be there
        return PathVerdict(True, False, None, f"{_where(prefix, segments, i - 1)} is free-form")

    def union(
        self, args: Sequence[Any], segments: Sequence[str], i: int, prefix: str
    ) -> PathVerdict:
        members = [a for a in args if a is not type(None) and not _is_unset(a)]
        optional = len(members) < len(args)
        here = _where(prefix, segments, i - 1)
        verdicts = [self.walk(m, segments, i, prefix) for m in members]
        possible = [v for v in verdicts if v.possible]
        if not possible:
            return verdicts[0] if verdicts else _IMPOSSIBLE
        scalars = {v.scalar for v in possible}
        scalar = scalars.pop() if len(scalars) == 1 else None
        if optional:
            why = f"{here} may be absent or null" if i else "the value may be absent"
            return PathVerdict(True, False, scalar, why)
        if len(possible) < len(verdicts):
            missing = next(v for v in verdicts if not v.possible)
            return PathVerdict(
                True, False, scalar, f"only some shapes of {here} have it ({missing.why})"
            )
        uncertain = next((v for v in possible if not v.certain), None)
        if uncertain is not None:
            return PathVerdict(True, False, scalar, uncertain.why)
        return PathVerdict(True, True, scalar)

    def _index(self, tp: Any, segments: Sequence[str], i: int, prefix: str) -> PathVerdict:
        segment = segments[i]
        here = _where(prefix, segments, i - 1)
        if not (segment.isdigit() and segment.isascii()):
            return _never(f"{here} is a list: index it with a number, not {segment!r}")
        args = typing.get_args(tp)
        item = args[0] if args else Any
        inner = self.walk(item, segments, i + 1, prefix)
        return inner.uncertain(f"{here} may have no item {segment}")

    def _field(
        self, model: type[BaseModel], segments: Sequence[str], i: int, prefix: str
    ) -> PathVerdict:
        segment = segments[i]
        fields = self.keys(model)
        if segment not in fields:
            here = _where(prefix, segments, i - 1)
            if model.model_config.get("extra") == "allow":
                why = f"{here} is free-form (no key {segment!r} listed)"
                return PathVerdict(True, False, None, why)
            return _never(f"{here} has no field {segment!r}{_suggest(segment, fields)}")
        return self.walk(fields[segment], segments, i + 1, prefix)


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _is_unset(tp: Any) -> bool:
    """githubkit's `Missing[...]` marker: `Literal[Unset._UNSET]`."""
    if typing.get_origin(tp) is not Literal:
        return False
    return all(type(v).__name__ == "Unset" for v in typing.get_args(tp))


def _is_scalar(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, _SCALARS)


def _scalar_name(tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        return "fixed value"
    names = {str: "string", int: "number", float: "number", bool: "boolean"}
    return names.get(tp, "string")


def _suggest(segment: str, fields: Mapping[str, Any]) -> str:
    lowered = segment.lower().replace("_", "")
    for key in fields:
        if key.lower().replace("_", "") == lowered:
            return f" (did you mean {key!r}?)"
    return ""


# -- the schemas of one githubkit version ------------------------------------------------------


class UnknownEvent(LookupError):
    """An event name GitHub's webhook schemas do not have."""


class EventSchemas:
    """GitHub's webhook event models from githubkit, imported lazily per event and cached.

    Thread-safe; share one instance per process (`EventSchemas.shared()`).
    """

    _shared: EventSchemas | None = None
    _shared_lock = threading.Lock()

    def __init__(self, package: str | None = None, examples: ExamplePaths | None = None) -> None:
        self.package = package or _latest_package()
        self.examples = examples or ExamplePaths.shipped()
        self._lock = threading.RLock()
        self._names: frozenset[str] | None = None
        self._variants: dict[str, dict[str | None, tuple[type[BaseModel], ...]]] = {}
        self._walker = _Walker()
        self._verdicts: dict[tuple[str, str | None, tuple[str, ...]], PathVerdict] = {}

    @classmethod
    def shared(cls) -> EventSchemas:
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    @property
    def modelled_events(self) -> frozenset[str]:
        """The event names githubkit has models for (cheap: no model is imported)."""
        if self._names is None:
            namespace = importlib.import_module(f"{self.package}._namespace")
            self._names = frozenset(str(n) for n in namespace.VALID_EVENT_NAMES)
        return self._names

    @property
    def event_names(self) -> frozenset[str]:
        """Every webhook event name known: githubkit's models and GitHub's example payloads."""
        return self.modelled_events | self.examples.event_names

    def actions(self, event: str) -> tuple[str | None, ...]:
        """The event's action names (sorted); `(None,)` for an event without actions."""
        modelled = set(self._load(event)) if event in self.modelled_events else set()
        known = modelled | set(self.examples.actions(event))
        return tuple(sorted(known, key=lambda a: (a is not None, a or "")))

    def verdict(self, event: str, action: str | None, segments: Sequence[str]) -> PathVerdict:
        """The path below `github.` (envelope keys) for one (event, action); cached."""
        key = (event, action, tuple(segments))
        found = self._verdicts.get(key)
        if found is not None:
            return found
        if segments and segments[0] in _ALWAYS:
            found = (
                PathVerdict(True)
                if len(segments) == 1
                else _never(f"github.{segments[0]} is a string")
            )
        else:
            found = self._modelled(event, action, segments)
            if not found.possible:
                found = self._exemplified(event, action, segments, found)
        with self._lock:
            self._verdicts[key] = found
        return found

    def _modelled(self, event: str, action: str | None, segments: Sequence[str]) -> PathVerdict:
        """The verdict of githubkit's models alone."""
        models = self._load(event).get(action) if event in self.modelled_events else None
        if not models:
            what = f"{event} action {action}" if action else event
            return _never(f"githubkit has no model of {what}")
        if len(models) == 1:
            return self._walker.walk(models[0], segments, 0, "github")
        return self._walker.union(models, segments, 0, "github")

    def _exemplified(
        self, event: str, action: str | None, segments: Sequence[str], modelled: PathVerdict
    ) -> PathVerdict:
        """A path the models lack is still possible when GitHub's example payloads carry it:
        for this action, or for another one when the models give this action its top object
        (an object has one shape whatever the action)."""
        known = self.examples.lookup(event, action, segments)
        if known is None:
            return modelled
        path = ".".join(("github", *segments))
        if known.for_action:
            if known.kind == "n":
                return PathVerdict(True, False, None, f"{path} is null in some example payloads")
            return PathVerdict(True, True, known.scalar)
        top = self._modelled(event, action, segments[:1]) if len(segments) > 1 else modelled
        if not top.possible:
            return modelled
        shown = ", ".join(known.actions) or "other payloads"
        why = f"{path} is in GitHub's example payloads of {event} {shown}, not in its schema"
        return PathVerdict(True, False, known.scalar, why)

    def _load(self, event: str) -> dict[str | None, tuple[type[BaseModel], ...]]:
        found = self._variants.get(event)
        if found is not None:
            return found
        if event not in self.modelled_events:
            raise UnknownEvent(event)
        with self._lock:
            found = self._variants.get(event)
            if found is None:
                module = importlib.import_module(f"{self.package}.{event}")
                found = _by_action(module.Event)
                self._variants[event] = found
        return found


def _latest_package() -> str:
    """The webhooks package of githubkit's latest schema version (without the deprecated
    `githubkit.versions.latest` alias, which warns on import)."""
    import githubkit  # noqa: F401  # githubkit_schemas.core needs githubkit imported first
    from githubkit_schemas.core import LATEST_VERSION, VERSIONS

    return f"githubkit_schemas.{VERSIONS[LATEST_VERSION]}.webhooks"


def _models(tp: Any) -> Iterator[type[BaseModel]]:
    tp = _unwrap(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        for member in typing.get_args(tp):
            yield from _models(member)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        yield tp


def _by_action(event_type: Any) -> dict[str | None, tuple[type[BaseModel], ...]]:
    """An event's models grouped by the value of their `action` Literal (None: no action)."""
    grouped: dict[str | None, list[type[BaseModel]]] = {}
    for model in _models(event_type):
        info = model.model_fields.get("action")
        values: tuple[Any, ...] = (None,)
        if info is not None and typing.get_origin(_unwrap(info.annotation)) is Literal:
            values = typing.get_args(_unwrap(info.annotation))
        for value in values:
            grouped.setdefault(None if value is None else str(value), []).append(model)
    return {action: tuple(models) for action, models in grouped.items()}


# -- checking compiled agents ----------------------------------------------------------------


@dataclass(frozen=True)
class _Finding:
    """One problem, before it is located in a file."""

    agent: CompiledAgent
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
        agent: CompiledAgent,
        path: str,
        locate: tuple[str, ...],
        message: str,
        severity: Severity,
    ) -> None:
        self.findings.append(_Finding(agent, path, locate, message, severity))


def check_agents(
    agents: Sequence[CompiledAgent], schemas: EventSchemas | None = None
) -> list[_Finding]:
    """Every event-schema problem of the agents' triggers, in agent and trigger order."""
    report = _Report(schemas or EventSchemas.shared())
    for agent in agents:
        for trigger in agent.triggers:
            _check_trigger(report, agent, trigger)
    return report.findings


def check_event_paths(result: CompileResult, auto_dir: Path) -> list[Diagnostic]:
    """The `agents.report.run_check` hook: findings as diagnostics at their file and line."""
    findings = check_agents(result.agents)
    locator = _Locator(Path(auto_dir))
    out = []
    for f in findings:
        file, line = locator.where(f.agent, f.locate)
        out.append(Diagnostic(file, line, f.path, f.message, f.severity))
    return out


def _check_trigger(report: _Report, agent: CompiledAgent, trigger: Trigger) -> None:
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
            )
    for number, filter_ in enumerate(trigger.filters):
        _check_filter(report, agent, trigger, scope, number, filter_)
    for m, mount in enumerate(agent.mounts):
        _check_mount(report, agent, trigger, scope, m, mount)


def _scope(report: _Report, agent: CompiledAgent, trigger: Trigger) -> _TriggerScope | None:
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
        if action in known:
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
    report: _Report, agent: CompiledAgent, trigger: Trigger, scope: _TriggerScope
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
    agent: CompiledAgent,
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
    )


def _check_mount(
    report: _Report,
    agent: CompiledAgent,
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
        )


def _check_path(
    report: _Report,
    agent: CompiledAgent,
    scope: _TriggerScope,
    segments: tuple[str, ...],
    path: str,
    locate: tuple[str, ...],
    what: str,
    *,
    needs_scalar: bool,
    absence_ok: bool = False,
) -> None:
    """One path (starting at `github`) against every (event, action) of a trigger's scope."""
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
    uncertain = next((v for v in possible if not v.certain), None)
    if uncertain is not None and not absence_ok:
        consequence = "the spawn is refused when it is" if needs_scalar else "the filter fails"
        report.add(
            agent,
            path,
            locate,
            f"{what} may be absent or null in {scope.event} ({uncertain.why}); {consequence}",
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


# -- where a branch comes from (triggers.matching.event_branch) --------------------------------


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
    """The envelope paths (below `github`) `triggers.matching.event_branch` reads a branch from.

    Asked of `event_branch` itself with a recording probe, so the two never disagree.
    """
    seen: list[tuple[str, ...]] = []
    event_branch(_Probe(seen, (), event))
    return tuple(seen)


# -- where a finding was written ---------------------------------------------------------------


class _Locator:
    """Best-effort line of a finding: the trigger or mount entry in the agent file or its imports.

    Compiled agents do not keep lines; the entry is found again by its event and name
    (triggers) or mountPath (mounts), following `imports` when the agent file lacks it.
    """

    def __init__(self, auto_dir: Path) -> None:
        self.auto_dir = auto_dir
        self._docs: dict[Path, YMap | None] = {}
        self._targets: dict[Path, list[Path]] = {}

    def where(self, agent: CompiledAgent, locate: tuple[str, ...]) -> tuple[str, int]:
        """(file as the compiler names it, line); the agent file's line 1 when not found."""
        path = self._path(agent.source_file)
        if path is None:
            return agent.source_file, 1
        for file, doc in self._documents(path, 0, set()):
            node = self._find(agent, doc, locate)
            if node is not None:
                return self._display(file, agent.source_file), node.loc.line
        return agent.source_file, 1

    def _path(self, display: str) -> Path | None:
        _, _, relative = display.partition("/")
        candidate = self.auto_dir / relative
        return candidate.resolve() if candidate.is_file() else None

    def _display(self, path: Path, agent_file: str) -> str:
        """The compiler's display name: the .auto directory's name, then the relative path."""
        root = self.auto_dir.resolve()
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            return path.as_posix()
        prefix = agent_file.partition("/")[0]
        return f"{prefix}/{relative}"

    def _load(self, path: Path) -> YMap | None:
        if path not in self._docs:
            try:
                self._docs[path] = load_document(path, path.name)[0]
            except SourceError:
                self._docs[path] = None
        return self._docs[path]

    def _documents(self, path: Path, depth: int, seen: set[Path]) -> Iterator[tuple[Path, YMap]]:
        doc = self._load(path)
        if doc is None or path in seen or depth > _MAX_IMPORT_DEPTH:
            return
        seen.add(path)
        yield path, doc
        for target in self._imports(path, doc):
            yield from self._documents(target, depth + 1, seen)

    def _imports(self, path: Path, doc: YMap) -> list[Path]:
        found = self._targets.get(path)
        if found is None:
            found = []
            imports = doc.get("imports")
            for item in imports.items if isinstance(imports, YSeq) else ():
                if isinstance(item, YScalar) and isinstance(item.value, str):
                    target = (path.parent / item.value).resolve()
                    if target.is_file():
                        found.append(target)
            self._targets[path] = found
        return found

    def _find(self, agent: CompiledAgent, doc: YMap, locate: tuple[str, ...]) -> YNode | None:
        if locate[0] == "mount":
            entry = _entry(doc, "mounts", lambda plain: _same_mount_path(plain, locate[1]))
            return _field_node(entry, ("ref",)) if entry is not None else None
        trigger = agent.triggers[int(locate[1])]

        actions = list(trigger.actions) if trigger.actions is not None else None

        def same(plain: Mapping[str, Any]) -> bool:
            if trigger.name is not None:
                return bool(plain.get("name") == trigger.name)
            return bool(
                plain.get("event") == trigger.event
                and plain.get("name") is None
                and plain.get("actions") == actions
            )

        entry = _entry(doc, "triggers", same)
        return _field_node(entry, locate[2:]) if entry is not None else None


def _same_mount_path(plain: Mapping[str, Any], mount_path: str) -> bool:
    written = plain.get("mountPath")
    return isinstance(written, str) and normalize_mount_path(written) == mount_path


_IDENTIFYING = frozenset({"name", "event", "actions", "mountPath"})


def _entry(doc: YMap, key: str, match: Callable[[Mapping[str, Any]], bool]) -> YMap | None:
    seq = doc.get(key)
    for item in seq.items if isinstance(seq, YSeq) else ():
        if isinstance(item, YMap):
            # only the keys an entry is recognised by: the rest (filters, texts) may be large
            plain = {k: to_plain(v) for k, (_, v) in item.entries.items() if k in _IDENTIFYING}
            if match(plain):
                return item
    return None


def _field_node(entry: YMap, fields: Sequence[str]) -> YNode:
    node: YNode = entry
    for name in fields:
        if isinstance(node, YMap) and name in node.entries:
            node = node.entries[name][1]
        elif isinstance(node, YSeq) and name.isdigit() and int(name) < len(node.items):
            node = node.items[int(name)]
        else:
            break
    return node
