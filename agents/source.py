"""Safe YAML loading into located nodes: every value remembers the file and line it came from."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agents.errors import Loc, SourceError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "YMap",
    "YNode",
    "YScalar",
    "YSeq",
    "describe",
    "join",
    "load_document",
    "read_contained",
    "to_plain",
]

MAX_FILE_BYTES = 1_000_000
MAX_NESTING = 64

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: YAML events (scalars, collections) one agent file may hold
MAX_NODES = 20_000
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_TAG = "tag:yaml.org,2002:"


@dataclass(slots=True)
class YNode:
    loc: Loc


@dataclass(slots=True)
class YScalar(YNode):
    value: Any
    # A block scalar (| or >) starts its text on the line after the indicator.
    block: bool = False


@dataclass(slots=True)
class YSeq(YNode):
    items: list[YNode] = field(default_factory=list)


@dataclass(slots=True)
class YMap(YNode):
    # key -> (where the key was written, value)
    entries: dict[str, tuple[Loc, YNode]] = field(default_factory=dict)

    def get(self, key: str) -> YNode | None:
        entry = self.entries.get(key)
        return entry[1] if entry is not None else None

    def key_loc(self, key: str) -> Loc:
        entry = self.entries.get(key)
        return entry[0] if entry is not None else self.loc


def join(path: str, key: str | int) -> str:
    """The dotted field path of ``key`` under ``path``."""
    return f"{path}.{key}" if path else str(key)


def describe(node: YNode) -> str:
    """A short name for a node's type, for error messages."""
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    assert isinstance(node, YScalar)
    value = node.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return "a string"


def to_plain(node: YNode) -> Any:
    """The node as plain Python data (dicts, lists, scalars)."""
    if isinstance(node, YMap):
        return {key: to_plain(value) for key, (_, value) in node.entries.items()}
    if isinstance(node, YSeq):
        return [to_plain(item) for item in node.items]
    assert isinstance(node, YScalar)
    return node.value


_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def read_contained(path: Path, display: str, root: Path | None = None) -> bytes:
    """The first MAX_FILE_BYTES + 1 bytes of an agent file that is a regular file whose real
    path is inside `root` (when given); SourceError otherwise, without opening it.

    Checked before the open (a FIFO would block it, a device never end), then again on the
    open descriptor, which is opened non-blocking: a file swapped in between is refused too.
    Nothing about a file outside `root` (its path, its contents) goes into the message.
    """
    where = Loc(display, 1)
    try:
        if root is not None:
            real = Path(os.path.realpath(path))
            if not real.is_relative_to(root):
                via = "a symlink leading" if path.is_symlink() else "a path"
                raise SourceError(
                    where, f"{via} outside the .auto directory: not followed, not read"
                )
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise SourceError(where, f"{_kind(mode)}, not a regular file: not read")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise SourceError(where, f"cannot read file: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SourceError(where, f"{_kind(mode)}, not a regular file: not read")
        try:
            return handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise SourceError(where, f"cannot read file: {exc.strerror or exc}") from exc


def load_document(
    path: Path, display: str, *, within: Path | None = None
) -> tuple[YMap, list[tuple[Loc, str, str]]]:
    """Read one agent document; returns the root mapping and non-fatal problems (duplicate keys).

    Problems are (where, field path, message). Raises SourceError for what makes the whole
    file unusable: not a regular file or outside `within` (`read_contained`), too large, not
    UTF-8, bad YAML, aliases, unsupported tags, nesting too deep, a root that is not a mapping.
    """
    raw = read_contained(path, display, within)
    if len(raw) > MAX_FILE_BYTES:
        raise SourceError(
            Loc(display, 1), f"file is larger than {MAX_FILE_BYTES} bytes; agent files are small"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(Loc(display, 1), f"file is not UTF-8: {exc.reason}") from exc
    try:
        # a cheap pass over the events first: a file of very many tiny nodes would
        # otherwise cost seconds and hundreds of MB to compose into located nodes
        for count, event in enumerate(yaml.parse(text, Loader=_Loader)):
            if count > MAX_NODES:
                raise SourceError(
                    Loc(display, event.start_mark.line + 1 if event.start_mark else 1),
                    f"more than {MAX_NODES} YAML nodes; agent files are small",
                )
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        raise SourceError(*_yaml_problem(exc, display)) from exc
    except yaml.YAMLError as exc:
        raise SourceError(Loc(display, 1), f"invalid YAML: {exc}") from exc
    except RecursionError as exc:
        raise SourceError(Loc(display, 1), "invalid YAML: nested too deeply") from exc
    if root is None:
        return YMap(Loc(display, 1)), []
    builder = _Builder(display)
    node = builder.build(root, 0, None)
    if not isinstance(node, YMap):
        raise SourceError(node.loc, f"an agent document must be a mapping, not {describe(node)}")
    return node, builder.problems


def _yaml_problem(exc: yaml.MarkedYAMLError, display: str) -> tuple[Loc, str]:
    """Where the YAML broke (the problem mark: the line a reader must fix) and what broke,
    with the construct it was inside and where that started when the parser says so."""
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 1
    message = f"invalid YAML: {exc.problem or exc.context or 'syntax error'}"
    if exc.problem and exc.context:
        started = exc.context_mark
        where = f" started at line {started.line + 1}" if started is not None else ""
        message += f" ({exc.context}{where})"
    return Loc(display, line), message


class _Builder:
    """Turns composed yaml nodes into located nodes, refusing aliases and exotic tags."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.seen: set[int] = set()
        self.problems: list[tuple[Loc, str, str]] = []

    def build(self, node: yaml.Node, depth: int, loc: Loc | None, path: str = "") -> YNode:
        here = Loc(self.display, node.start_mark.line + 1)
        if id(node) in self.seen:
            # The composer shares one node object between an anchor and its aliases, so the
            # node knows only where it was anchored; a mapping value also knows its key's line.
            raise SourceError(
                loc or here,
                f"YAML aliases (*name) are not allowed in agent files (the value anchored at "
                f"line {here.line} is reused); write the value out",
            )
        self.seen.add(id(node))
        if depth > MAX_NESTING:
            raise SourceError(here, f"nested deeper than {MAX_NESTING} levels")
        loc = loc or here
        tag = node.tag or ""
        if isinstance(node, yaml.MappingNode):
            if tag != _TAG + "map":
                raise SourceError(here, f"YAML tag {tag!r} is not allowed")
            return self._mapping(node, depth, loc, path)
        if isinstance(node, yaml.SequenceNode):
            if tag != _TAG + "seq":
                raise SourceError(here, f"YAML tag {tag!r} is not allowed")
            items = [
                self.build(item, depth + 1, None, join(path, index))
                for index, item in enumerate(node.value)
            ]
            return YSeq(loc, items)
        assert isinstance(node, yaml.ScalarNode)
        return YScalar(here, _scalar(node, here), node.style in ("|", ">"))

    def _mapping(self, node: yaml.MappingNode, depth: int, loc: Loc, path: str) -> YMap:
        out = YMap(loc)
        for key_node, value_node in node.value:
            key_loc = Loc(self.display, key_node.start_mark.line + 1)
            if not isinstance(key_node, yaml.ScalarNode):
                raise SourceError(key_loc, "mapping keys must be plain strings")
            key = str(key_node.value)
            # A collection value reports at its key's line, where a reader looks for it.
            child_loc = None if isinstance(value_node, yaml.ScalarNode) else key_loc
            value = self.build(value_node, depth + 1, child_loc, join(path, key))
            if key in out.entries:
                first = out.entries[key][0].line
                self.problems.append(
                    (key_loc, join(path, key), f"duplicate key {key!r} (first at line {first})")
                )
            out.entries[key] = (key_loc, value)
        return out


def _scalar(node: yaml.ScalarNode, loc: Loc) -> Any:
    tag = node.tag or ""
    if tag == _TAG + "str" or tag == _TAG + "timestamp":
        return node.value
    if tag == _TAG + "null":
        return None
    if tag == _TAG + "bool":
        return _CONSTRUCTOR.construct_yaml_bool(node)
    if tag == _TAG + "int":
        return _CONSTRUCTOR.construct_yaml_int(node)
    if tag == _TAG + "float":
        return _CONSTRUCTOR.construct_yaml_float(node)
    raise SourceError(loc, f"YAML tag {tag!r} is not allowed")
