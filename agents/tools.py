"""Tool entries (`tools:`): the GitHub tool and its allowlist, checked against mount grants."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from agents.github_tools import TOOLS, grants
from agents.model import Capabilities, Mount
from agents.schema import Sink, join, opt_enum, opt_str_list, strict_map
from agents.source import YMap, YNode, YScalar, YSeq, describe

__all__ = ["GATED_TOOLS", "compile_tools"]

#: GitHub tools a session sees only when some mount grants the capability (mounts seed), which
#: naming one with no such mount is an error for: tool → (what it needs, the test on a mount's
#: capabilities). The merge and secrets families of the one tool table (agents.github_tools).
GATED_TOOLS: dict[str, tuple[str, Callable[[Capabilities], bool]]] = {
    name: (need.text, partial(lambda n, caps: grants(caps, n), need))
    for name, need in TOOLS.items()
    if need.family in ("merge", "secrets")
}


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
            _check_gates(sink, item.get("allow"), join(path, "allow"), mounts)
        if not any(mount.auth.kind == "githubApp" for mount in mounts):
            sink.warning(
                item.loc,
                path,
                "the github tool needs a githubApp mount; without one it does nothing",
            )
        out.append(tool)
    return out


def _check_gates(sink: Sink, node: YNode | None, path: str, mounts: list[Mount]) -> None:
    """A gated tool no mount grants stays invisible and uncallable: naming it is an error."""
    granted = [m.auth.capabilities for m in mounts if m.auth.kind == "githubApp"]
    for index, item in enumerate(node.items if isinstance(node, YSeq) else ()):
        if not (isinstance(item, YScalar) and isinstance(item.value, str)):
            continue
        if item.value not in TOOLS:
            sink.warning(
                item.loc,
                join(path, index),
                f"{item.value!r} is no GitHub tool the broker knows: every call of it is "
                "refused (unknown_tool)",
            )
            continue
        gate = GATED_TOOLS.get(item.value)
        if gate is None:
            continue
        needs, test = gate
        if not any(test(caps) for caps in granted):
            sink.error(
                item.loc,
                join(path, index),
                f"{item.value} needs a githubApp mount granting {needs}, and no mount does: "
                "the tool would stay invisible and uncallable",
            )
