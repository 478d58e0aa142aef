"""Tool entries (`tools:`): the GitHub tool and its allowlist, checked against mount grants."""

from __future__ import annotations

from typing import Any

from agents.github_tools import TOOLS, grants
from agents.model import Mount
from agents.schema import Sink, join, opt_enum, opt_str_list, strict_map
from agents.source import YMap, YNode, YScalar, YSeq, describe

__all__ = ["compile_tools"]


def compile_tools(sink: Sink, node: YNode | None, mounts: list[Mount]) -> list[dict[str, Any]]:
    """The agent's tool entries (only `kind: github`, with an optional `allow` list)."""
    if node is None:
        return []
    if not isinstance(node, YSeq):
        sink.error(
            node.loc, "tools", f"must be a list of {{kind: ...}} entries, got {describe(node)}"
        )
        return []
    out: list[dict[str, Any]] = []
    for index, item in enumerate(node.items):
        path = join("tools", index)
        if not isinstance(item, YMap):
            sink.error(item.loc, path, f"must be a {{kind: ...}} entry, got {describe(item)}")
            continue
        kind = opt_enum(sink, item.get("kind"), join(path, "kind"), ("github",))
        if "kind" not in item.entries:
            sink.error(item.loc, join(path, "kind"), "required field 'kind' is missing")
        if kind != "github":
            continue
        strict_map(sink, item, path, allowed=("kind", "allow"), what="a github tool entry")
        tool: dict[str, Any] = {"kind": "github"}
        allow = opt_str_list(sink, item.get("allow"), join(path, "allow"))
        if allow is not None:
            tool["allow"] = allow
            _warn_ungranted(sink, item.get("allow"), join(path, "allow"), mounts)
        if not any(mount.auth.kind == "githubApp" for mount in mounts):
            sink.warning(
                item.loc,
                path,
                "the github tool needs a githubApp mount; without one it does nothing",
            )
        out.append(tool)
    return out


def _warn_ungranted(sink: Sink, node: YNode | None, path: str, mounts: list[Mount]) -> None:
    """A tool no `githubApp` mount grants stays invisible and uncallable even when the
    allowlist names it (the mounts seed): a warning naming it and what it needs, never an
    error, so the agent still loads. (Without any githubApp mount the entry's own warning
    says the tool does nothing.)"""
    granted = [m.auth.capabilities for m in mounts if m.auth.kind == "githubApp"]
    for index, item in enumerate(node.items if isinstance(node, YSeq) else ()):
        if not (isinstance(item, YScalar) and isinstance(item.value, str)):
            continue
        need = TOOLS.get(item.value)
        if need is None:
            sink.warning(
                item.loc,
                join(path, index),
                f"{item.value!r} is no GitHub tool the broker knows: every call of it is "
                "refused (unknown_tool)",
            )
        elif granted and not any(grants(caps, need) for caps in granted):
            sink.warning(
                item.loc,
                join(path, index),
                f"{item.value} needs a githubApp mount granting {need.text}, and no mount "
                "does: the session never sees it (invisible, every call refused "
                "tool_not_granted)",
            )
