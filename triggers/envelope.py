"""The trigger payload envelope: the webhook body in lowerCamelCase under `github`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from triggers.json_codec import JsonView


@lru_cache(maxsize=8192)
def camel(key: str) -> str:
    """`pull_request` → `pullRequest`, `html_url` → `htmlUrl`; leading underscores kept."""
    stripped = key.lstrip("_")
    lead = key[: len(key) - len(stripped)]
    if "_" not in stripped:
        return key
    head, *rest = stripped.split("_")
    return lead + head + "".join(part[:1].upper() + part[1:] for part in rest if part)


def camelize(value: Any) -> Any:
    """Every key at every depth through `camel`; values untouched.

    Recursive (fast) for ordinary payloads; a body nested deeper than the interpreter's
    stack allows goes through the iterative walk instead.
    """
    try:
        return _camelize(value)
    except RecursionError:
        return _camelize_deep(value)


#: JSON scalars: passed through as they are, without a call
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _camelize(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[camel(k)] = v if type(v) in _SCALARS else _camelize(v)
        return out
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else _camelize(v) for v in value]
    return value


def _camelize_deep(value: Any) -> Any:
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, parent, slot = stack.pop()
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            parent[slot] = out
            for k, v in node.items():
                out[camel(k)] = None
                stack.append((v, out, camel(k)))
        elif isinstance(node, list):
            items: list[Any] = [None] * len(node)
            parent[slot] = items
            stack.extend((v, items, i) for i, v in enumerate(node))
        else:
            parent[slot] = node
    return root[0]


def build_envelope(event: str, delivery_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """`{"github": {"event", "deliveryId", ...body in lowerCamelCase}}`."""
    github: dict[str, Any] = camelize(body)
    github["event"] = event
    github["deliveryId"] = delivery_id
    return {"github": github}


def envelope_view(event: str, delivery_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """`build_envelope`'s document, read through a `CamelView`: equal to it, but only the
    objects that are looked into get their keys translated (a matcher and a few templates
    read a handful of paths of a payload with hundreds of keys)."""
    return {"github": CamelView(body, {"event": event, "deliveryId": delivery_id})}


_UNREAD: Any = object()


class CamelView(Mapping[str, Any], JsonView):
    """A JSON object seen with `camel` keys, the same as `camelize` gives, translated on first
    use. Nested objects are views too; arrays are lists (of views). `materialize` (and
    `dump_json`, through it) gives the plain document. `extra` members come last, over any
    member of that name (as `build_envelope` sets `event` and `deliveryId`)."""

    __slots__ = ("_extra", "_keys", "_raw", "_values")

    def __init__(self, raw: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        self._raw = raw
        self._extra = extra
        self._keys: dict[str, str] | None = None
        #: every member read so far (nested objects as views); the extra ones from the start
        self._values: dict[str, Any] = dict(extra) if extra else {}

    def _index(self) -> dict[str, str]:
        keys = self._keys
        if keys is None:
            keys = self._keys = _index_of(tuple(self._raw))
        return keys

    def get(self, key: str, default: Any = None) -> Any:
        value = self._values.get(key, _UNREAD)
        if value is not _UNREAD:
            return value
        raw_key = self._index().get(key, _UNREAD)
        if raw_key is _UNREAD:
            return default
        value = self._raw[raw_key]
        if type(value) not in _SCALARS:
            value = _view(value)
        self._values[key] = value
        return value

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _UNREAD)
        if value is _UNREAD:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._values or key in self._index()

    def __iter__(self) -> Iterator[str]:
        keys = self._index()
        yield from keys
        if self._extra is not None:
            yield from (k for k in self._extra if k not in keys)

    def __len__(self) -> int:
        keys = self._index()
        return len(keys) + sum(1 for k in self._extra or () if k not in keys)

    def __repr__(self) -> str:
        return f"CamelView({self.materialize()!r})"

    def materialize(self) -> dict[str, Any]:
        """The plain document (`camelize` of the object, then the extra members)."""
        out: dict[str, Any] = camelize(self._raw)
        if self._extra is not None:
            out.update(self._extra)
        return out


#: camelCase name → raw key, per object shape: a webhook's objects (a repository, a user, a
#: pull request) come with the same keys delivery after delivery. Bounded, shapes of at most
#: _SHAPE_KEYS keys only, so hostile payloads cannot grow it without limit.
_INDEXES: dict[tuple[str, ...], dict[str, str]] = {}
_MAX_SHAPES = 2048
_SHAPE_KEYS = 256


def _index_of(shape: tuple[str, ...]) -> dict[str, str]:
    """`{camel(k): k}` over `shape`, shared (never changed once built). As in `camelize`, a
    name two raw keys translate to keeps the first one's place and the last one's key."""
    index = _INDEXES.get(shape)
    if index is None:
        index = dict(zip(map(camel, shape), shape, strict=True))
        if len(shape) <= _SHAPE_KEYS:
            if len(_INDEXES) >= _MAX_SHAPES:
                _INDEXES.clear()
            _INDEXES[shape] = index
    return index


def _view(value: Any) -> Any:
    if isinstance(value, dict):
        return CamelView(value)
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else _view(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """`value` with every `CamelView` in it made a plain dict (for serialisers that need one)."""
    if isinstance(value, CamelView):
        return value.materialize()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def session_input(delivery_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
    """The stored input of a trigger-spawned session (what ref templates render against)."""
    return {"triggerEventId": delivery_id, "payload": envelope}
