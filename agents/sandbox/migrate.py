"""The migration from `security.sandboxReadRoots`/`sandboxWriteRoots` and `readOnly` to mounts."""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Callable
from typing import Any

from agents.sandbox.env import Problem

__all__ = ["Check", "migrate"]

_ROOTS = (("sandboxReadRoots", "readonly"), ("sandboxWriteRoots", "writable"))
_FIELD = {mode: key for key, mode in _ROOTS}

#: what `sandbox check` says of a whole configuration document: every problem (the rules and
#: the host's answers: a source that does not exist, a symbolic link into a protected path)
Check = Callable[[object], list[Problem]]


def _roots(security: dict[str, Any], problems: list[Problem]) -> list[dict[str, str]]:
    """The legacy roots as mounts with source = target (what srt needs), then the fields
    removed from `security`."""
    mounts: list[dict[str, str]] = []
    for key, mode in _ROOTS:
        if key not in security:
            continue
        roots = security.pop(key)
        if not isinstance(roots, list) or not all(isinstance(r, str) and r for r in roots):
            problems.append(Problem(f"security.{key}", "must be a list of path strings"))
            continue
        mounts += [{"source": r, "target": r, "mode": mode} for r in roots]
    return mounts


def _mode(mount: dict[str, Any], where: str, problems: list[Problem]) -> None:
    """A mount's `readOnly` replaced by `mode` (in place, keeping the key's position)."""
    if "readOnly" not in mount:
        return
    read_only = mount["readOnly"]
    if not isinstance(read_only, bool):
        problems.append(Problem(f"{where}.readOnly", "must be true or false"))
        return
    mode = "readonly" if read_only else "writable"
    if "mode" in mount and mount["mode"] != mode:
        problems.append(
            Problem(
                f"{where}.readOnly",
                f"{str(read_only).lower()} contradicts mode {mount['mode']!r}: remove one",
            )
        )
        return
    rebuilt = {
        ("mode" if k == "readOnly" else k): (mode if k == "readOnly" else v)
        for k, v in mount.items()
        if k != "mode"
    }
    mount.clear()
    mount.update(rebuilt)


def _within(path: str, root: str) -> bool:
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def _dropped(mount: dict[str, str], backend: str, check: Check | None, notes: list[str]) -> bool:
    """Whether `sandbox check` refuses this legacy root as a mount on its own (then `notes`
    says why it is dropped)."""
    if check is None:
        return False
    problems = check({"sandbox": {"backend": backend, "mounts": [mount]}})
    if not problems:
        return False
    why = "; ".join(p.message for p in problems)
    notes.append(f"security.{_FIELD[mount['mode']]} {mount['target']}: dropped, since {why}")
    return True


def _reconciled(
    existing: list[Any],
    added: list[dict[str, str]],
    *,
    backend: str,
    check: Check | None,
    notes: list[str],
) -> list[dict[str, str]]:
    """The legacy roots that may join `existing` without breaking a rule `sandbox check`
    applies: a read root that is a write root too becomes the one writable mount; with srt
    (whose mounts only add access), a read root inside a writable mount is dropped, since it
    would stay writable there; a root `check` refuses on its own (on this host: one that does
    not exist, or leads into a protected path) is dropped. Each is said in `notes`."""
    srt = backend == "srt"
    added = [m for m in added if m in existing or not _dropped(m, backend, check, notes)]
    writable = [m["target"] for m in added if m["mode"] == "writable"]
    writable += [
        m["target"]
        for m in existing
        if isinstance(m, dict) and m.get("mode") == "writable" and isinstance(m.get("target"), str)
    ]
    kept: list[dict[str, str]] = []
    for mount in added:
        root = mount["target"]
        if mount["mode"] == "readonly":
            if any(m["target"] == root and m["mode"] == "writable" for m in added):
                notes.append(
                    f"{root} is in both security.sandboxReadRoots and sandboxWriteRoots: "
                    "one writable mount"
                )
                continue
            around = [w for w in writable if _within(root, w)] if srt else []
            if around:
                notes.append(
                    f"security.sandboxReadRoots {root} lies inside the writable mount "
                    f"{max(around, key=len)}: dropped (srt mounts only add access, so it "
                    "would stay writable there)"
                )
                continue
        if mount not in existing and mount not in kept:
            kept.append(mount)
    return kept


def _mounts(
    sandbox: dict[str, Any], added: list[dict[str, str]], check: Check | None, notes: list[str]
) -> list[Problem]:
    mounts = sandbox.get("mounts")
    if mounts is None:
        if not added:
            return []
        mounts = sandbox["mounts"] = []
    if not isinstance(mounts, list):
        return [Problem("sandbox.mounts", "must be a list")]
    problems: list[Problem] = []
    for n, mount in enumerate(mounts):
        if isinstance(mount, dict):
            _mode(mount, f"sandbox.mounts[{n}]", problems)
    backend = sandbox.get("backend", "srt")
    mounts += _reconciled(mounts, added, backend=backend, check=check, notes=notes)
    return problems


def migrate(
    raw: object, notes: list[str] | None = None, *, check: Check | None = None
) -> tuple[object, list[Problem]]:
    """A configuration → the same configuration in today's shape, or the problems that stop
    the migration (then nothing is to be written). An already-migrated configuration comes
    back equal to itself. Legacy roots become mounts appended after the existing ones; a root
    already mounted at the same place in the same mode is not added twice, and roots that
    would break a mount rule are merged or dropped, each with a line in `notes`. With
    `check` (what `sandbox check` says of a document, host included), a root it refuses as a
    mount on its own is dropped too, with the reason."""
    notes = [] if notes is None else notes
    if not isinstance(raw, dict):
        return raw, [Problem("(document)", "must be a JSON object")]
    doc = copy.deepcopy(raw)
    problems: list[Problem] = []
    security = doc.get("security")
    if isinstance(security, dict) and any(key in security for key, _ in _ROOTS):
        added = _roots(security, problems)
        if not security:
            del doc["security"]
    else:
        added = []
    sandbox = doc.get("sandbox")
    if sandbox is None and added:
        sandbox = doc["sandbox"] = {"mounts": []}
    if sandbox is not None and not isinstance(sandbox, dict):
        return raw, [*problems, Problem("sandbox", "must be an object")]
    if isinstance(sandbox, dict):
        problems += _mounts(sandbox, added, check, notes)
        if added and "backend" not in sandbox:
            # the legacy roots were srt's: its host paths are what source = target keeps valid
            doc["sandbox"] = {"backend": "srt", **sandbox}
    if problems:
        return raw, problems
    return doc, []
