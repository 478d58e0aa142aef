"""Inline environment objects → generated environment resources, with every field constraint."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from agents.errors import Loc
from agents.schema import (
    NAME_RE,
    Sink,
    join,
    opt_bool,
    opt_enum,
    opt_int,
    opt_str,
    opt_str_list,
    strict_map,
)
from agents.source import YMap, YNode, YScalar, YSeq, describe

__all__ = ["PRESETS", "SecretUse", "compile_env_map", "compile_environment"]

PRESETS = {
    "node24": "node:24-bookworm-slim",
    "node22": "node:22-bookworm-slim",
    "linux-node22": "node:22-bookworm-slim",
    "default": "node:24-bookworm-slim",
}
ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SECRET_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,128}")
TTL_RE = re.compile(r"[1-9][0-9]*(s|m|h|d)")
BASE_REF_FORBIDDEN = re.compile(r"[\s#\\]")
NAME_RULE = "1-128 characters of [A-Za-z0-9_.-]"

_ENV_KEYS = {
    "name",
    "labels",
    "annotations",
    "image",
    "steps",
    "setup",
    "setupCache",
    "resources",
    "env",
    "approval",
}


@dataclass(frozen=True)
class SecretUse:
    """A required ``$secret`` reference and where it was written."""

    name: str
    loc: Loc
    path: str


def compile_environment(
    sink: Sink, node: YMap, path: str, secrets: list[SecretUse]
) -> dict[str, Any] | None:
    """The generated resource ``{name, labels, annotations, spec}``, or None after errors."""
    before = sink.error_count
    strict_map(sink, node, path, allowed=_ENV_KEYS, required=("name", "image"), what="environment")
    name = opt_str(
        sink, node.get("name"), join(path, "name"), pattern=NAME_RE, rule=NAME_RULE, strip=True
    )
    labels = _string_map(sink, node.get("labels"), join(path, "labels"))
    annotations = _string_map(sink, node.get("annotations"), join(path, "annotations"))
    spec: dict[str, Any] = {}
    image = node.get("image")
    if image is not None:
        spec.update(_image(sink, image, join(path, "image")))
    spec["steps"] = opt_str_list(sink, node.get("steps"), join(path, "steps")) or []
    spec["setup"] = _setup(sink, node.get("setup"), join(path, "setup"))
    cache = node.get("setupCache")
    if cache is not None:
        spec["setupCache"] = _setup_cache(sink, cache, join(path, "setupCache"))
    resources = node.get("resources")
    if resources is not None:
        spec["resources"] = _resources(sink, resources, join(path, "resources"))
    spec["env"] = compile_env_map(sink, node.get("env"), join(path, "env"), secrets)
    approval = opt_enum(sink, node.get("approval"), join(path, "approval"), ("bypass", "prompt"))
    spec["approval"] = approval or "bypass"
    if sink.error_count > before or name is None:
        return None
    return {
        "name": name,
        "labels": labels,
        "annotations": annotations,
        "spec": spec,
    }


def _string_map(sink: Sink, node: YNode | None, path: str) -> dict[str, str]:
    if node is None:
        return {}
    if not isinstance(node, YMap):
        sink.error(node.loc, path, f"must be a map of strings, got {describe(node)}")
        return {}
    out = {}
    for key, (_, value) in node.entries.items():
        text = opt_str(sink, value, join(path, key), non_empty=False)
        if text is not None:
            out[key] = text
    return out


def _image(sink: Sink, node: YNode, path: str) -> dict[str, Any]:
    if not isinstance(node, YMap):
        sink.error(
            node.loc,
            path,
            f"must be {{kind: preset, name}} or {{kind: base, ref}}, got {describe(node)}",
        )
        return {}
    kind = opt_enum(sink, node.get("kind"), join(path, "kind"), ("preset", "base"))
    if "kind" not in node.entries:
        sink.error(
            node.loc, join(path, "kind"), "required field 'kind' is missing (preset or base)"
        )
    if kind == "preset":
        strict_map(
            sink, node, path, allowed=("kind", "name"), required=("name",), what="a preset image"
        )
        preset = opt_str(sink, node.get("name"), join(path, "name"))
        if preset is None:
            return {}
        if preset not in PRESETS:
            known = ", ".join(PRESETS)
            sink.error(
                node.loc, join(path, "name"), f"Unknown runtime preset {preset!r} (known: {known})"
            )
            return {}
        return {"image": {"kind": "preset", "name": preset}, "baseImage": PRESETS[preset]}
    if kind == "base":
        strict_map(
            sink, node, path, allowed=("kind", "ref"), required=("ref",), what="a base image"
        )
        ref = opt_str(sink, node.get("ref"), join(path, "ref"), strip=True)
        if ref is None:
            return {}
        ref_node = node.get("ref")
        assert ref_node is not None
        if len(ref) > 512:
            sink.error(
                ref_node.loc, join(path, "ref"), "image reference is longer than 512 characters"
            )
        elif BASE_REF_FORBIDDEN.search(ref) or ref.startswith("-"):
            sink.error(
                ref_node.loc,
                join(path, "ref"),
                f"{ref!r} is not an image reference: no whitespace, '#' or '\\', "
                "not starting with '-'",
            )
        else:
            return {"image": {"kind": "base", "ref": ref}, "baseImage": ref}
    return {}


def _setup(sink: Sink, node: YNode | None, path: str) -> list[dict[str, Any]]:
    if node is None:
        return []
    if not isinstance(node, YSeq):
        sink.error(node.loc, path, f"must be a list of setup entries, got {describe(node)}")
        return []
    out = []
    for index, item in enumerate(node.items):
        here = join(path, index)
        entry = strict_map(
            sink,
            item,
            here,
            allowed=("name", "commands", "cache"),
            required=("name", "commands"),
            what="a setup entry",
        )
        if entry is None:
            continue
        name = opt_str(sink, entry.get("name"), join(here, "name"), pattern=NAME_RE, rule=NAME_RULE)
        commands = opt_str_list(
            sink, entry.get("commands"), join(here, "commands"), non_empty_list=True
        )
        compiled: dict[str, Any] = {"name": name, "commands": commands}
        cache = entry.get("cache")
        if cache is not None:
            compiled["cache"] = _cache(sink, cache, join(here, "cache"))
        out.append(compiled)
    return out


def _cache(sink: Sink, node: YNode, path: str) -> dict[str, Any]:
    entry = strict_map(
        sink, node, path, allowed=("key", "files", "paths"), required=("key",), what="a setup cache"
    )
    if entry is None:
        return {}
    key = opt_str(sink, entry.get("key"), join(path, "key"), pattern=NAME_RE, rule=NAME_RULE)
    files = opt_str_list(sink, entry.get("files"), join(path, "files")) or []
    for index, item in _strings(entry.get("files")):
        if item.value.startswith("/") or ".." in item.value.split("/"):
            sink.error(
                item.loc,
                join(join(path, "files"), index),
                f"{item.value!r} must be a relative path inside the workspace, without '..'",
            )
    paths = opt_str_list(sink, entry.get("paths"), join(path, "paths")) or []
    for index, item in _strings(entry.get("paths")):
        normal = posixpath.normpath(item.value)
        if ".." in item.value.split("/") or not normal.startswith("/home/user/"):
            sink.error(
                item.loc,
                join(join(path, "paths"), index),
                f"{item.value!r} must be an absolute path under /home/user",
            )
    return {"key": key, "files": files, "paths": paths}


def _strings(node: YNode | None) -> list[tuple[int, YScalar]]:
    """The string items of a list node with their indexes (others are reported elsewhere)."""
    if not isinstance(node, YSeq):
        return []
    return [
        (index, item)
        for index, item in enumerate(node.items)
        if isinstance(item, YScalar) and isinstance(item.value, str) and item.value
    ]


def _setup_cache(sink: Sink, node: YNode, path: str) -> dict[str, Any]:
    entry = strict_map(sink, node, path, allowed=("ttl",), required=("ttl",), what="setupCache")
    if entry is None:
        return {}
    ttl = opt_str(
        sink,
        entry.get("ttl"),
        join(path, "ttl"),
        pattern=TTL_RE,
        rule="a duration like 30m, 24h or 7d ([1-9][0-9]*(s|m|h|d))",
    )
    return {"ttl": ttl}


def _resources(sink: Sink, node: YNode, path: str) -> dict[str, Any]:
    entry = strict_map(sink, node, path, allowed=("cpuCount", "memoryMB"), what="resources")
    if entry is None:
        return {}
    if not entry.entries:
        sink.error(entry.loc, path, "set at least one of cpuCount, memoryMB")
    out: dict[str, Any] = {}
    cpu = opt_int(sink, entry.get("cpuCount"), join(path, "cpuCount"), minimum=1)
    if cpu is not None:
        out["cpuCount"] = cpu
    memory = opt_int(sink, entry.get("memoryMB"), join(path, "memoryMB"), minimum=128)
    if memory is not None:
        out["memoryMB"] = memory
    return out


def compile_env_map(
    sink: Sink, node: YNode | None, path: str, secrets: list[SecretUse]
) -> dict[str, Any]:
    """An env map: keys ``[A-Za-z_][A-Za-z0-9_]*``, values a string or ``{$secret, optional}``."""
    if node is None:
        return {}
    if not isinstance(node, YMap):
        sink.error(node.loc, path, f"must be a map of variables, got {describe(node)}")
        return {}
    out: dict[str, Any] = {}
    for key, (key_loc, value) in node.entries.items():
        here = join(path, key)
        if not ENV_KEY_RE.fullmatch(key):
            sink.error(
                key_loc, here, f"{key!r} is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"
            )
            continue
        if isinstance(value, YScalar) and isinstance(value.value, str):
            out[key] = value.value
            continue
        if not isinstance(value, YMap):
            sink.error(
                value.loc,
                here,
                f"must be a string or {{$secret: name}}, got {describe(value)} "
                "(quote numbers and booleans)",
            )
            continue
        ref = strict_map(
            sink,
            value,
            here,
            allowed=("$secret", "optional"),
            required=("$secret",),
            what="a secret reference",
        )
        if ref is None:
            continue
        secret = opt_str(
            sink, ref.get("$secret"), join(here, "$secret"), pattern=SECRET_NAME_RE, rule=NAME_RULE
        )
        optional = opt_bool(sink, ref.get("optional"), join(here, "optional"))
        if secret is None:
            continue
        out[key] = {"$secret": secret, "optional": bool(optional)}
        if not optional:
            secret_node = ref.get("$secret")
            assert secret_node is not None
            secrets.append(SecretUse(secret, secret_node.loc, join(here, "$secret")))
    return out
