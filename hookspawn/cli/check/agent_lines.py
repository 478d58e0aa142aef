"""Where a finding about a compiled agent was written: the line of its trigger or mount entry,
in the agent file or one of its imports (compiled agents keep no lines)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.errors import SourceError
from agents.model import CompiledAgent, PartialAgent
from agents.mounts import normalize_mount_path
from agents.source import YMap, YNode, YScalar, YSeq, load_document, to_plain

__all__ = ["Locator"]

_MAX_IMPORT_DEPTH = 16


class Locator:
    """Best-effort line of a finding: the trigger or mount entry in the agent file or its imports.

    Compiled agents do not keep lines; the entry is found again by its event and name
    (triggers) or mountPath (mounts), following `imports` when the agent file lacks it.
    """

    def __init__(self, auto_dir: Path) -> None:
        self.auto_dir = auto_dir
        self._docs: dict[Path, YMap | None] = {}
        self._targets: dict[Path, list[Path]] = {}

    def where(
        self, agent: CompiledAgent | PartialAgent, locate: tuple[str, ...]
    ) -> tuple[str, int]:
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

    def _find(
        self, agent: CompiledAgent | PartialAgent, doc: YMap, locate: tuple[str, ...]
    ) -> YNode | None:
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
