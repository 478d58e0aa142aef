"""Tool entries (`tools:`): the GitHub tool and its allowlist, checked against what hookspawn
executes and the mounts' grants."""

from __future__ import annotations

from typing import Any

from agents.errors import Diagnostic, Loc
from agents.github_tools import NOT_EXECUTED, TOOLS, grants
from agents.model import Mount
from agents.schema import Sink, join, opt_enum, opt_str_list, strict_map
from agents.source import YMap, YNode, YScalar, YSeq, describe

__all__ = ["allow_diagnostics", "compile_tools"]


def compile_tools(
    sink: Sink, node: YNode | None, mounts: list[Mount] | None
) -> list[dict[str, Any]]:
    """The agent's tool entries (only `kind: github`, with an optional `allow` list). `mounts`
    None: some mount failed to compile, so nothing is said of what the mounts grant (the
    mount's own error says what is wrong)."""
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
        if mounts is None:
            out.append(tool)
            continue
        for found in allow_diagnostics(item.get("allow"), join(path, "allow"), mounts):
            sink.warning(Loc(found.file, found.line), found.path, found.message)
        if not any(mount.auth.kind == "githubApp" for mount in mounts):
            sink.warning(
                item.loc,
                path,
                "the github tool needs a githubApp mount; without one it does nothing",
            )
        out.append(tool)
    return out


def allow_diagnostics(node: YNode | None, path: str, mounts: list[Mount]) -> list[Diagnostic]:
    """Warnings for the names an `allow` list writes (never errors, so the agent still loads):
    one hookspawn cannot execute (no tool of the table: every call of it is `unknown_tool`,
    with what to use instead when the name is an older one), and one no `githubApp` mount
    grants, which stays invisible and uncallable even when the allowlist names it (the mounts
    seed). Without any githubApp mount the entry's own warning says the tool does nothing."""
    granted = [m.auth.capabilities for m in mounts if m.auth.kind == "githubApp"]
    found: list[Diagnostic] = []
    for index, item in enumerate(node.items if isinstance(node, YSeq) else ()):
        if not (isinstance(item, YScalar) and isinstance(item.value, str)):
            continue
        where = join(path, index)
        need = TOOLS.get(item.value)
        if need is None:
            instead = NOT_EXECUTED.get(item.value)
            message = (
                f"{item.value!r} is no GitHub tool hookspawn executes: every call of it is "
                "refused (unknown_tool)" + (f"; {instead}" if instead else "")
            )
        elif granted and not any(grants(caps, need) for caps in granted):
            message = (
                f"{item.value} needs a githubApp mount granting {need.text}, and no mount "
                "does: the session never sees it (invisible, every call refused "
                "tool_not_granted)"
            )
        else:
            continue
        found.append(Diagnostic(item.loc.file, item.loc.line, where, message, "warning"))
    return found
