"""What GitHub's webhook events carry: a verdict per envelope path, event and action.

An edge module: the schemas are githubkit's typed webhook models (pydantic), read as shapes
(`event_shapes`: a table generated from them, shipped beside this module, so no model is
imported), never by the pure core. The models omit some fields GitHub sends, so a path they
refuse is still possible when GitHub's example payloads carry it (`event_paths`, beside this
module). The checks of compiled agents built on these verdicts are in `event_checks`.

Envelope keys are the models' JSON names (field aliases, else field names) in lowerCamelCase;
`github.event` and `github.deliveryId` always exist (and `triggerEventId` in refs).

A path is, for one (event, action):
- impossible: some segment names no field of its object (closed models), indexes something
  that is not a list, or goes below a scalar → an error;
- uncertain: it can be absent — an optional (`Missing[...]`) or nullable field, a list index
  (the list may be shorter), a key of a free-form map, or a field only some alternatives of a
  union have → a warning;
- not a scalar (an object or a list) where a template needs a string, number or boolean → a
  warning.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hookspawn.cli.check.event_paths import ExamplePaths
from hookspawn.cli.check.event_shapes import SCALARS, Shape, ShapeSource, shapes

__all__ = ["EventSchemas", "PathVerdict"]

#: envelope keys hookspawn adds to every event
_ALWAYS = frozenset({"event", "deliveryId"})


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
    #: uncertain because it may be missing (an optional field, an index, a free-form map),
    #: not only because it (or an object on its way) may be null
    absent: bool = True

    def uncertain(self, why: str) -> PathVerdict:
        """This verdict, also possibly missing for `why`."""
        if not self.possible:
            return self
        if not self.certain:
            return self if self.absent else PathVerdict(True, False, self.scalar, why)
        return PathVerdict(True, False, self.scalar, why)

    @property
    def null_only(self) -> bool:
        """Uncertain only because of a null on the way: a text template renders it empty."""
        return self.possible and not self.certain and not self.absent


_IMPOSSIBLE = PathVerdict(False, False, None)
_FREE = PathVerdict(True, False, None, "the value is free-form")


def _never(why: str) -> PathVerdict:
    return PathVerdict(False, False, None, why)


def _where(prefix: str, segments: Sequence[str], upto: int) -> str:
    return ".".join([prefix, *segments[: upto + 1]]) if prefix else ".".join(segments[: upto + 1])


class _Walker:
    """Walks shapes (hookspawn.cli.check.event_shapes) along a path of envelope keys."""

    def __init__(self, source: ShapeSource) -> None:
        self._source = source

    def walk(self, shape: Shape, segments: Sequence[str], i: int, prefix: str) -> PathVerdict:
        """The verdict for `segments[i:]` below a value of this shape."""
        if isinstance(shape, dict):
            if "u" in shape:
                return self.union(shape["u"], segments, i, prefix)
            if i == len(segments):
                return PathVerdict(True, True, False)
            return self._index(shape["l"], segments, i, prefix)
        if shape in SCALARS or shape == "unset":
            if i == len(segments):
                return PathVerdict(True)
            name = SCALARS.get(shape, "fixed value")
            return _never(f"{_where(prefix, segments, i - 1)} is a {name}")
        if i == len(segments):
            return PathVerdict(True, True, False) if shape != "any" else _FREE
        if shape[:1].isupper():
            return self._field(shape, segments, i, prefix)
        # a dict, Any, None alone: free-form, anything may be there
        return PathVerdict(True, False, None, f"{_where(prefix, segments, i - 1)} is free-form")

    def union(
        self, members: Sequence[Shape], segments: Sequence[str], i: int, prefix: str
    ) -> PathVerdict:
        present = [m for m in members if m not in ("null", "unset")]
        optional = len(present) < len(members)
        unset = "unset" in members
        here = _where(prefix, segments, i - 1)
        verdicts = [self.walk(m, segments, i, prefix) for m in present]
        possible = [v for v in verdicts if v.possible]
        if not possible:
            return verdicts[0] if verdicts else _IMPOSSIBLE
        scalars = {v.scalar for v in possible}
        scalar = scalars.pop() if len(scalars) == 1 else None
        if optional and (unset or not i):
            why = f"{here} may be absent or null" if i else "the value may be absent"
            return PathVerdict(True, False, scalar, why)
        if optional:  # nullable, never missing: absent only when something deeper is
            deeper = next((v for v in possible if not v.certain), None)
            if deeper is not None and deeper.absent:
                return PathVerdict(True, False, scalar, deeper.why)
            return PathVerdict(True, False, scalar, f"{here} may be null", absent=False)
        if len(possible) < len(verdicts):
            missing = next(v for v in verdicts if not v.possible)
            return PathVerdict(
                True, False, scalar, f"only some shapes of {here} have it ({missing.why})"
            )
        uncertain = next((v for v in possible if not v.certain and v.absent), None)
        uncertain = uncertain or next((v for v in possible if not v.certain), None)
        if uncertain is not None:
            return PathVerdict(True, False, scalar, uncertain.why, absent=uncertain.absent)
        return PathVerdict(True, True, scalar)

    def _index(self, item: Shape, segments: Sequence[str], i: int, prefix: str) -> PathVerdict:
        segment = segments[i]
        here = _where(prefix, segments, i - 1)
        if not (segment.isdigit() and segment.isascii()):
            return _never(f"{here} is a list: index it with a number, not {segment!r}")
        inner = self.walk(item, segments, i + 1, prefix)
        return inner.uncertain(f"{here} may have no item {segment}")

    def _field(self, name: str, segments: Sequence[str], i: int, prefix: str) -> PathVerdict:
        segment = segments[i]
        model = self._source.model(name)
        if segment not in model.fields:
            here = _where(prefix, segments, i - 1)
            if model.open:
                why = f"{here} is free-form (no key {segment!r} listed)"
                return PathVerdict(True, False, None, why)
            return _never(f"{here} has no field {segment!r}{_suggest(segment, model.fields)}")
        return self.walk(model.fields[segment], segments, i + 1, prefix)


def _suggest(segment: str, fields: Mapping[str, Shape]) -> str:
    lowered = segment.lower().replace("_", "")
    for key in fields:
        if key.lower().replace("_", "") == lowered:
            return f" (did you mean {key!r}?)"
    return ""


# -- the schemas of one githubkit version ------------------------------------------------------


class EventSchemas:
    """GitHub's webhook event schemas (their shapes: the shipped table, else githubkit's models
    described per event used) with GitHub's example payloads; verdicts cached.

    Thread-safe; share one instance per process (`EventSchemas.shared()`).
    """

    _shared: EventSchemas | None = None
    _shared_lock = threading.Lock()

    def __init__(
        self, source: ShapeSource | None = None, examples: ExamplePaths | None = None
    ) -> None:
        self.source = source or shapes()
        self.examples = examples or ExamplePaths.shipped()
        self._lock = threading.Lock()
        self._walker = _Walker(self.source)
        self._verdicts: dict[tuple[str, str | None, tuple[str, ...]], PathVerdict] = {}

    @classmethod
    def shared(cls) -> EventSchemas:
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    @property
    def modelled_events(self) -> frozenset[str]:
        """The event names githubkit has models for."""
        return self.source.events

    @property
    def event_names(self) -> frozenset[str]:
        """Every webhook event name known: githubkit's models and GitHub's example payloads."""
        return self.modelled_events | self.examples.event_names

    def actions(self, event: str) -> tuple[str | None, ...]:
        """The event's action names (sorted); `(None,)` for an event without actions."""
        modelled = set(self.source.variants(event)) if event in self.modelled_events else set()
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

    def free_actions(self, event: str) -> bool:
        """Whether the event's action is free text (repository_dispatch: the sender's
        `event_type`), so any action name is one it may have."""
        if event not in self.modelled_events:
            return False
        return any(
            "action" in self.source.model(name).fields
            for name in self.source.variants(event).get(None, ())
        )

    def _modelled(self, event: str, action: str | None, segments: Sequence[str]) -> PathVerdict:
        """The verdict of githubkit's models alone."""
        models = None
        if event in self.modelled_events:
            variants = self.source.variants(event)
            models = variants.get(action) or (
                variants.get(None) if self.free_actions(event) else None
            )
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
                why = f"{path} is null in some example payloads"
                return PathVerdict(True, False, None, why, absent=False)
            return PathVerdict(True, True, known.scalar)
        top = self._modelled(event, action, segments[:1]) if len(segments) > 1 else modelled
        if not top.possible:
            return modelled
        shown = ", ".join(known.actions) or "other payloads"
        why = f"{path} is in GitHub's example payloads of {event} {shown}, not in its schema"
        return PathVerdict(True, False, known.scalar, why)
