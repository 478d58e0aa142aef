"""Loading agent files and resolving their imports: each file once, cycles and depth checked."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agents.errors import Loc, SourceError
from agents.merge import apply_remove, merge_documents
from agents.schema import Sink, opt_str
from agents.source import YMap, YSeq, describe, join, load_document

__all__ = ["DIRECTIVES", "FILE_PATH", "MAX_IMPORT_DEPTH", "AgentFiles", "ImportResolver"]

MAX_IMPORT_DEPTH = 64
FILE_PATH = "(file)"
DIRECTIVES = ("imports", "remove")


@dataclass
class AgentFiles:
    root: Path
    prefix: str

    def display(self, path: Path) -> str:
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()
        return f"{self.prefix}/{relative}"


class ImportResolver:
    """Loads each file once and resolves its imports (cached, cycle- and depth-checked)."""

    def __init__(self, root: Path, files: AgentFiles, sink: Sink) -> None:
        self.root = root
        self.files = files
        self.sink = sink
        self.resolved: dict[Path, YMap | None] = {}

    def _load(self, path: Path) -> YMap | None:
        display = self.files.display(path)
        try:
            doc, problems = load_document(path, display, within=self.root)
        except SourceError as exc:
            self.sink.error(exc.loc, FILE_PATH, exc.message)
            return None
        for loc, where, message in problems:
            self.sink.error(loc, where, message)
        return doc

    def refuse(self, path: Path) -> None:
        """Report an agent file that is not a regular file inside the directory (loading it
        refuses it before it is opened)."""
        self._load(path)

    def resolve(self, path: Path, chain: tuple[Path, ...]) -> YMap | None:
        if path in self.resolved:
            return self.resolved[path]
        self.resolved[path] = None  # while resolving: a re-entry is a cycle, reported below
        doc = self._load(path)
        if doc is None:
            return None
        merged: YMap | None = None
        here = (*chain, path)
        for loc, where, target in self._imports(doc, path):
            if target in here:
                cycle = (*here[here.index(target) :], target)
                shown = " → ".join(self.files.display(p) for p in cycle)
                self.sink.error(loc, where, f"import cycle: {shown}")
                continue
            if len(here) >= MAX_IMPORT_DEPTH:
                self.sink.error(loc, where, f"import chain deeper than {MAX_IMPORT_DEPTH} files")
                continue
            imported = self.resolve(target, here)
            if imported is not None:
                merged = merge_documents(merged, imported)
        remove = doc.get("remove")
        if remove is not None:
            merged = apply_remove(self.sink, merged, remove, doc.loc)
        body = YMap(doc.loc, {k: v for k, v in doc.entries.items() if k not in DIRECTIVES})
        result = merge_documents(merged, body)
        self.resolved[path] = result
        return result

    def _imports(self, doc: YMap, path: Path) -> list[tuple[Loc, str, Path]]:
        node = doc.get("imports")
        if node is None:
            return []
        if not isinstance(node, YSeq):
            self.sink.error(node.loc, "imports", f"must be a list of paths, got {describe(node)}")
            return []
        out = []
        for index, item in enumerate(node.items):
            where = join("imports", index)
            value = opt_str(self.sink, item, where)
            if value is None:
                continue
            if value.startswith("/"):
                self.sink.error(
                    item.loc, where, f"{value!r}: imports are paths relative to this file"
                )
                continue
            target = Path(os.path.realpath(path.parent / value))
            if not target.is_relative_to(self.root):
                self.sink.error(item.loc, where, f"{value!r} is outside the .auto directory")
                continue
            if not target.is_file():
                shown = self.files.display(target)
                what = "not a regular file" if target.exists() else "no such file"
                self.sink.error(item.loc, where, f"{value!r}: {what} ({shown})")
                continue
            out.append((item.loc, where, target))
        return out
