"""Mount entries → Mount: repository forms, paths, refs, depth, auth and capabilities."""

from __future__ import annotations

import posixpath
import re

from agents.capability_defaults import warn_default_writes
from agents.model import CAPABILITY_FIELDS, Auth, Capabilities, Mount
from agents.schema import Sink, join, opt_enum, opt_int, opt_str, strict_map
from agents.source import YMap, YNode, YScalar, YSeq, describe
from agents.templates import compile_field
from templating import Dialect, InvalidRefError, Template, TemplateError, check_ref

__all__ = [
    "NAME",
    "OWNER",
    "bare_repository",
    "compile_mount",
    "compile_mounts",
    "github_repository",
    "normalize_mount_path",
    "resolve_working_directory",
]

#: a repository's owner and name as a mount may write them (a name is not `.` or `..`)
OWNER = r"[A-Za-z0-9][A-Za-z0-9-]{0,38}"
NAME = r"[A-Za-z0-9._-]{1,100}"
_OWNER = OWNER
_REPO = NAME
BARE_RE = re.compile(rf"({_OWNER})/({_REPO})")
HTTPS_GITHUB_RE = re.compile(rf"https://github\.com/({_OWNER})/({_REPO}?)(?:\.git)?/?", re.I)
SSH_GITHUB_RE = re.compile(rf"git@github\.com:({_OWNER})/({_REPO}?)(?:\.git)?", re.I)
HTTPS_RE = re.compile(r"https://[^\s/]+/\S+")
SSH_RE = re.compile(r"git@[^\s:]+:\S+")
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+")
INSTALLATION_RE = re.compile(r"[0-9]{1,20}")

_MOUNT_KEYS = ("kind", "name", "repository", "mountPath", "ref", "depth", "auth")
_CAPABILITY_KEYS = {key: attr for attr, key, _ in CAPABILITY_FIELDS}


def bare_repository(value: str) -> bool:
    """Whether `value` is a plain OWNER/NAME the compiler accepts as a mount's repository."""
    match = BARE_RE.fullmatch(value)
    return match is not None and match.group(2) not in (".", "..")


def github_repository(repository: str) -> str | None:
    """``owner/name`` for a GitHub-shaped repository, else None."""
    for pattern in (BARE_RE, HTTPS_GITHUB_RE, SSH_GITHUB_RE):
        match = pattern.fullmatch(repository)
        if match and match.group(2) not in (".", ".."):
            return f"{match.group(1)}/{match.group(2)}"
    return None


def normalize_mount_path(value: str) -> str:
    """One spelling per directory: repeated slashes, `.` segments and a trailing slash dropped."""
    return "/" + "/".join(s for s in value.split("/") if s not in ("", "."))


def compile_mounts(sink: Sink, node: YNode | None) -> tuple[bool, list[Mount]]:
    """The agent's mount list: each mount compiled, mountPaths distinct and never nested."""
    if node is None:
        return True, []
    if not isinstance(node, YSeq):
        sink.error(node.loc, "mounts", f"must be a list of mounts, got {describe(node)}")
        return False, []
    out: list[tuple[int, Mount]] = []
    ok = True
    for index, item in enumerate(node.items):
        mount = compile_mount(sink, item, join("mounts", index))
        if mount is None:
            ok = False
            continue
        clash = _overlap(mount, out)
        if clash is not None:
            where = item.get("mountPath") if isinstance(item, YMap) else None
            sink.error((where or item).loc, join(join("mounts", index), "mountPath"), clash)
            ok = False
            continue
        out.append((index, mount))
    return ok, [mount for _, mount in out]


def _overlap(mount: Mount, earlier: list[tuple[int, Mount]]) -> str | None:
    """Why `mount` cannot sit beside the earlier mounts: the same path, or one inside another
    (staging cleans each checkout of untracked files, which would wipe a nested one)."""
    here = mount.mount_path
    for index, other in earlier:
        there = other.mount_path
        if here == there:
            return f"{here} is already the mountPath of mounts.{index}"
        if here.startswith(there + "/"):
            return f"{here} is inside {there}, the mountPath of mounts.{index}: mounts cannot nest"
        if there.startswith(here + "/"):
            return f"{there}, the mountPath of mounts.{index}, is inside {here}: mounts cannot nest"
    return None


def compile_mount(sink: Sink, node: YNode, path: str) -> Mount | None:
    before = sink.error_count
    entry = strict_map(
        sink,
        node,
        path,
        allowed=_MOUNT_KEYS,
        required=("kind", "repository", "mountPath"),
        what="a mount",
    )
    if entry is None:
        return None
    opt_enum(sink, entry.get("kind"), join(path, "kind"), ("git",))
    opt_str(sink, entry.get("name"), join(path, "name"))
    repository = _repository(sink, entry.get("repository"), join(path, "repository"))
    mount_path = _mount_path(sink, entry.get("mountPath"), join(path, "mountPath"))
    ref_node = entry.get("ref")
    ref = opt_str(sink, ref_node, join(path, "ref"))
    template = None
    if ref_node is None:
        sink.warning(
            entry.loc,
            join(path, "ref"),
            "no ref: the checkout is whatever FETCH_HEAD points at; set ref explicitly",
        )
    elif ref is not None:
        assert isinstance(ref_node, YScalar)
        template = _ref(sink, ref_node, ref, join(path, "ref"))
    depth = opt_int(sink, entry.get("depth"), join(path, "depth"), minimum=1)
    auth_node = entry.get("auth")
    auth = Auth() if auth_node is None else _auth(sink, auth_node, join(path, "auth"))
    if (
        auth is not None
        and auth.kind == "githubApp"
        and repository is not None
        and not BARE_RE.fullmatch(repository)
    ):
        shaped = github_repository(repository)
        hint = f"; write it as {shaped}" if shaped else ""
        repo_node = entry.get("repository")
        assert repo_node is not None
        sink.error(
            repo_node.loc,
            join(path, "repository"),
            f"githubApp auth needs the owner/repo form, got {repository!r}{hint}",
        )
    if sink.error_count > before or repository is None or mount_path is None or auth is None:
        return None
    if auth.kind == "githubApp":
        warn_default_writes(sink, auth_node, join(path, "auth"), auth.capabilities)
    return Mount(
        repository=repository,
        github_repository=github_repository(repository),
        mount_path=mount_path,
        ref=ref,
        ref_template=template,
        depth=depth if depth is not None else 1,
        auth=auth,
    )


def _repository(sink: Sink, node: YNode | None, path: str) -> str | None:
    value = opt_str(sink, node, path)
    if value is None or node is None:
        return None
    if BARE_RE.fullmatch(value) or HTTPS_RE.fullmatch(value) or SSH_RE.fullmatch(value):
        return value
    sink.error(
        node.loc,
        path,
        f"{value!r} is not a repository: use owner/repo, an https:// URL or a git@host:path "
        "address",
    )
    return None


def _mount_path(sink: Sink, node: YNode | None, path: str) -> str | None:
    value = opt_str(sink, node, path)
    if value is None or node is None:
        return None
    if not value.startswith("/"):
        sink.error(node.loc, path, f"{value!r} must be an absolute path (start with /)")
        return None
    if ".." in value.split("/") or any(ch.isspace() or ord(ch) < 32 for ch in value):
        sink.error(node.loc, path, f"{value!r} must not contain '..' segments or whitespace")
        return None
    normal = normalize_mount_path(value)
    if normal == "/":
        sink.error(node.loc, path, f"{value!r} is the sandbox root: mount into a directory below /")
        return None
    return normal


def _ref(sink: Sink, node: YScalar, ref: str, path: str) -> Template | None:
    template = compile_field(sink, node, ref, path, Dialect.REF)
    if template is not None and not template.tokens:
        try:
            check_ref(ref)
        except InvalidRefError as exc:
            sink.error(
                node.loc, path, exc.reason and f"{ref!r} is not a valid git ref: {exc.reason}"
            )
            return None
        except TemplateError as exc:
            sink.error(node.loc, path, exc.message)
            return None
    return template


def _auth(sink: Sink, node: YNode, path: str) -> Auth | None:
    before = sink.error_count
    if not isinstance(node, YMap):
        strict_map(sink, node, path, allowed=(), what="auth")
        return None
    kind = opt_enum(sink, node.get("kind"), join(path, "kind"), ("none", "githubApp"))
    if "kind" not in node.entries:
        sink.error(
            node.loc, join(path, "kind"), "required field 'kind' is missing (none or githubApp)"
        )
    if kind == "none":
        strict_map(sink, node, path, allowed=("kind",), what="auth of kind none")
        return Auth() if sink.error_count == before else None
    if kind != "githubApp":
        return None
    strict_map(
        sink,
        node,
        path,
        allowed=("kind", "installationId", "commitAuthor", "capabilities"),
        what="githubApp auth",
    )
    installation = opt_str(
        sink,
        node.get("installationId"),
        join(path, "installationId"),
        pattern=INSTALLATION_RE,
        rule="a numeric installation id, as a quoted string",
    )
    author = _commit_author(sink, node.get("commitAuthor"), join(path, "commitAuthor"))
    caps_node = node.get("capabilities")
    capabilities = (
        Capabilities()
        if caps_node is None
        else _capabilities(sink, caps_node, join(path, "capabilities"))
    )
    if sink.error_count > before or capabilities is None:
        return None
    return Auth("githubApp", installation, author, capabilities)


def _commit_author(sink: Sink, node: YNode | None, path: str) -> dict[str, str] | None:
    if node is None:
        return None
    entry = strict_map(
        sink, node, path, allowed=("name", "email"), required=("name", "email"), what="commitAuthor"
    )
    if entry is None:
        return None
    name = opt_str(sink, entry.get("name"), join(path, "name"))
    email = opt_str(
        sink,
        entry.get("email"),
        join(path, "email"),
        pattern=EMAIL_RE,
        rule="an address containing @",
    )
    if name is None or email is None:
        return None
    return {"name": name, "email": email}


def _capabilities(sink: Sink, node: YNode, path: str) -> Capabilities | None:
    before = sink.error_count
    entry = strict_map(sink, node, path, allowed=_CAPABILITY_KEYS, what="capabilities")
    if entry is None:
        return None
    values: dict[str, str] = {}
    for key, attr in _CAPABILITY_KEYS.items():
        levels = ("none", "write") if key == "merge" else ("none", "read", "write")
        value = opt_enum(sink, entry.get(key), join(path, key), levels)
        if value is not None:
            values[attr] = value
    written = frozenset(key for key in _CAPABILITY_KEYS if key in entry.entries)
    caps = Capabilities(**values, written=written)  # type: ignore[arg-type]
    if caps.merge == "write" and (caps.contents != "write" or caps.pull_requests != "write"):
        merge_node = entry.get("merge")
        assert merge_node is not None
        sink.error(
            merge_node.loc,
            join(path, "merge"),
            "merge: write needs contents: write and pullRequests: write "
            f"(got contents: {caps.contents}, pullRequests: {caps.pull_requests})",
        )
    if caps.workflows == "read":
        workflows = entry.get("workflows")
        assert workflows is not None
        sink.warning(
            workflows.loc,
            join(path, "workflows"),
            "workflows: read grants nothing (GitHub grants workflows only as write); "
            "use none or write",
        )
    return caps if sink.error_count == before else None


def resolve_working_directory(
    sink: Sink, node: YNode | None, path: str, mounts: list[Mount]
) -> str | None:
    """Absent → the first mount's path; relative → under the first mount; absolute → as is."""
    if node is None:
        return mounts[0].mount_path if mounts else None
    value = opt_str(sink, node, path)
    if value is None:
        return None
    if value.startswith("/"):
        return value
    if not mounts:
        sink.error(
            node.loc, path, f"relative workingDirectory {value!r} needs a mount to resolve against"
        )
        return None
    base = mounts[0].mount_path
    resolved = posixpath.normpath(posixpath.join(base, value))
    root = posixpath.normpath(base)
    if resolved != root and not resolved.startswith(root.rstrip("/") + "/"):
        sink.error(node.loc, path, f"{value!r} escapes the first mount's path {base}")
        return None
    return resolved
