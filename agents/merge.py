"""Import merge rules over located documents: deep maps, keyed mounts, accumulating lists."""

from __future__ import annotations

from agents.errors import Loc
from agents.mounts import normalize_mount_path
from agents.schema import Sink, join, opt_str_list
from agents.source import YMap, YNode, YScalar, YSeq, describe

__all__ = ["REMOVABLE", "apply_remove", "merge_documents"]

REMOVABLE = ("tools", "triggers", "env")


def merge_documents(base: YMap | None, over: YMap) -> YMap:
    """``over`` applied on top of ``base`` (the merged imports); neither is modified."""
    if base is None:
        return over
    entries = dict(base.entries)
    for key, (key_loc, value) in over.entries.items():
        earlier = entries.get(key)
        if earlier is None:
            entries[key] = (key_loc, value)
            continue
        old = earlier[1]
        if key == "mounts":
            merged = _merge_mounts(old, value)
        elif key == "triggers":
            merged = _merge_triggers(old, value)
        elif key == "tools":
            merged = _accumulate(old, value)
        else:
            # environment: two objects deep-merge; a string and an object override each other.
            merged = deep_merge(old, value)
        entries[key] = (key_loc, merged)
    return YMap(over.loc, entries)


def deep_merge(old: YNode, new: YNode) -> YNode:
    """Maps merge key-wise; everything else (lists included) is replaced by the later value."""
    if not (isinstance(old, YMap) and isinstance(new, YMap)):
        return new
    entries = dict(old.entries)
    for key, (key_loc, value) in new.entries.items():
        earlier = entries.get(key)
        entries[key] = (key_loc, value if earlier is None else deep_merge(earlier[1], value))
    return YMap(new.loc, entries)


def _scalar_key(item: YNode, key: str) -> str | None:
    if isinstance(item, YMap):
        value = item.get(key)
        if isinstance(value, YScalar) and isinstance(value.value, str):
            return value.value
    return None


def _merge_mounts(old: YNode, new: YNode) -> YNode:
    """Match by authoring ``name`` when both items have one, else by (normalised) ``mountPath``:
    a named override of an unnamed imported mount at the same path merges into it."""
    if not (isinstance(old, YSeq) and isinstance(new, YSeq)):
        return new
    items = list(old.items)
    for item in new.items:
        match = _mount_match(items, item)
        if match is None:
            items.append(item)
        else:
            items[match] = deep_merge(items[match], item)
    return YSeq(new.loc, items)


def _mount_path_key(item: YNode) -> str | None:
    path = _scalar_key(item, "mountPath")
    return normalize_mount_path(path) if path is not None and path.startswith("/") else path


def _mount_match(items: list[YNode], item: YNode) -> int | None:
    name = _scalar_key(item, "name")
    if name is not None:
        for index, earlier in enumerate(items):
            if _scalar_key(earlier, "name") == name:
                return index
    path = _mount_path_key(item)
    if path is None:
        return None
    for index, earlier in enumerate(items):
        both_named = name is not None and _scalar_key(earlier, "name") is not None
        if not both_named and _mount_path_key(earlier) == path:
            return index
    return None


def _merge_triggers(old: YNode, new: YNode) -> YNode:
    if not (isinstance(old, YSeq) and isinstance(new, YSeq)):
        return new
    items = list(old.items)
    named = {name: i for i, item in enumerate(items) if (name := _scalar_key(item, "name"))}
    for item in new.items:
        name = _scalar_key(item, "name")
        if name is not None and name in named:
            items[named[name]] = item
        else:
            items.append(item)
    return YSeq(new.loc, items)


def _accumulate(old: YNode, new: YNode) -> YNode:
    if not (isinstance(old, YSeq) and isinstance(new, YSeq)):
        return new
    return YSeq(new.loc, [*old.items, *new.items])


def apply_remove(sink: Sink, base: YMap | None, remove: YNode, loc: Loc) -> YMap | None:
    """Apply a file's ``remove:`` directive to what its imports produced."""
    if not isinstance(remove, YMap):
        sink.error(remove.loc, "remove", f"must be a mapping, got {describe(remove)}")
        return base
    entries = dict(base.entries) if base is not None else {}
    for key, (key_loc, value) in remove.entries.items():
        path = join("remove", key)
        if key == "mounts":
            sink.error(
                key_loc, path, "mounts are not removable; override by key or drop the import"
            )
            continue
        if key not in REMOVABLE:
            sink.error(
                key_loc, path, f"{key!r} cannot be removed; remove: takes only tools, triggers, env"
            )
            continue
        names = opt_str_list(sink, value, path) or []
        current = entries.get(key)
        current_node = current[1] if current is not None else None
        kept, missing = _remove_from(key, current_node, names)
        for name in missing:
            sink.warning(key_loc, path, f"nothing to remove: no imported {_noun(key)} {name!r}")
        if current is not None and kept is not None:
            entries[key] = (current[0], kept)
    return YMap(base.loc if base is not None else loc, entries)


def _noun(key: str) -> str:
    return {"tools": "tool of kind", "triggers": "trigger named", "env": "env key"}[key]


def _remove_from(key: str, node: YNode | None, names: list[str]) -> tuple[YNode | None, list[str]]:
    wanted = set(names)
    found: set[str] = set()
    if key == "env":
        if not isinstance(node, YMap):
            return node, names
        entries = {}
        for name, entry in node.entries.items():
            if name in wanted:
                found.add(name)
            else:
                entries[name] = entry
        return YMap(node.loc, entries), [n for n in names if n not in found]
    if not isinstance(node, YSeq):
        return node, names
    field = "kind" if key == "tools" else "name"
    items = []
    for item in node.items:
        value = _scalar_key(item, field)
        if value is not None and value in wanted:
            found.add(value)
        else:
            items.append(item)
    return YSeq(node.loc, items), [n for n in names if n not in found]
