"""Inline environment objects → generated environment resources (`environment_spec`'s models),
with every field constraint."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from agents.environment_spec import (
    DEFAULT_SETUP_CACHE_TTL,
    TTL_RE,
    BaseImage,
    EnvironmentResource,
    EnvironmentSpec,
    EnvValue,
    Image,
    PresetImage,
    Resources,
    SecretRef,
    SetupCache,
    SetupEntry,
    SetupEntryCache,
)
from agents.errors import Loc
from agents.sandbox.env import protected_env_name
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

__all__ = [
    "PRESETS",
    "GeneratedEnvironment",
    "SecretUse",
    "compile_env_map",
    "compile_environment",
]

PRESETS = {
    "node24": "node:24-bookworm-slim",
    "node22": "node:22-bookworm-slim",
    "linux-node22": "node:22-bookworm-slim",
    "default": "node:24-bookworm-slim",
}
ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SECRET_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,128}")
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
) -> EnvironmentResource | None:
    """The generated resource (name, labels, annotations, spec), or None after errors."""
    before = sink.error_count
    strict_map(sink, node, path, allowed=_ENV_KEYS, required=("name", "image"), what="environment")
    name = opt_str(
        sink, node.get("name"), join(path, "name"), pattern=NAME_RE, rule=NAME_RULE, strip=True
    )
    labels = _string_map(sink, node.get("labels"), join(path, "labels"))
    annotations = _string_map(sink, node.get("annotations"), join(path, "annotations"))
    image_node = node.get("image")
    image = _image(sink, image_node, join(path, "image")) if image_node is not None else None
    steps = opt_str_list(sink, node.get("steps"), join(path, "steps")) or []
    setup = _setup(sink, node.get("setup"), join(path, "setup"))
    cache_node = node.get("setupCache")
    setup_cache = (
        _setup_cache(sink, cache_node, join(path, "setupCache"))
        if cache_node is not None
        else SetupCache(written=DEFAULT_SETUP_CACHE_TTL)
    )
    resources_node = node.get("resources")
    resources = (
        _resources(sink, resources_node, join(path, "resources"))
        if resources_node is not None
        else None
    )
    env = compile_env_map(sink, node.get("env"), join(path, "env"), secrets)
    approval = opt_enum(sink, node.get("approval"), join(path, "approval"), ("bypass", "prompt"))
    if sink.error_count > before or name is None or image is None or setup_cache is None:
        return None
    spec = EnvironmentSpec(
        image=image[0],
        base_image=image[1],
        steps=tuple(steps),
        setup=tuple(setup),
        setup_cache=setup_cache,
        resources=resources,
        env=env,
        approval="prompt" if approval == "prompt" else "bypass",
    )
    return EnvironmentResource(name=name, labels=labels, annotations=annotations, spec=spec)


@dataclass
class GeneratedEnvironment:
    """One generated environment resource and the files that generate it.

    Same-named copies dedupe when their compiled specs (defaults filled) are equal; their
    labels and annotations merge key by key, and one key with two values is a conflict.
    """

    name: str
    spec: EnvironmentSpec
    file: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    _sources: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def first(cls, resource: EnvironmentResource, file: str) -> GeneratedEnvironment:
        found = cls(resource.name, resource.spec, file)
        found._merge(resource, file)
        return found

    @property
    def resource(self) -> EnvironmentResource:
        """The resource with every copy's labels and annotations."""
        return EnvironmentResource(
            name=self.name, labels=self.labels, annotations=self.annotations, spec=self.spec
        )

    def absorb(self, resource: EnvironmentResource, file: str) -> str | None:
        """Merge another file's copy in; why it conflicts, or None."""
        ours, theirs = self.spec, resource.spec
        if ours != theirs:
            differ = sorted(
                info.alias or name
                for name, info in EnvironmentSpec.model_fields.items()
                if getattr(ours, name) != getattr(theirs, name)
            )
            return (
                f"{file} differs from the one generated by {self.file} "
                f"(spec fields {', '.join(differ)})"
            )
        for kind, merged, theirs_map in (
            ("labels", self.labels, resource.labels),
            ("annotations", self.annotations, resource.annotations),
        ):
            for key, value in theirs_map.items():
                if key in merged and merged[key] != value:
                    return (
                        f"{kind}.{key} is {value!r} in {file} but {merged[key]!r} in "
                        f"{self._sources[kind, key]}"
                    )
        self._merge(resource, file)
        return None

    def _merge(self, resource: EnvironmentResource, file: str) -> None:
        for kind, merged, theirs_map in (
            ("labels", self.labels, resource.labels),
            ("annotations", self.annotations, resource.annotations),
        ):
            for key, value in theirs_map.items():
                merged[key] = value
                self._sources.setdefault((kind, key), file)


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


def _image(sink: Sink, node: YNode, path: str) -> tuple[Image, str] | None:
    """The image as written and the base image it stands for, or None after errors."""
    if not isinstance(node, YMap):
        sink.error(
            node.loc,
            path,
            f"must be {{kind: preset, name}} or {{kind: base, ref}}, got {describe(node)}",
        )
        return None
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
            return None
        if preset not in PRESETS:
            known = ", ".join(PRESETS)
            sink.error(
                node.loc, join(path, "name"), f"Unknown runtime preset {preset!r} (known: {known})"
            )
            return None
        return PresetImage(kind="preset", name=preset), PRESETS[preset]
    if kind == "base":
        strict_map(
            sink, node, path, allowed=("kind", "ref"), required=("ref",), what="a base image"
        )
        ref = opt_str(sink, node.get("ref"), join(path, "ref"), strip=True)
        if ref is None:
            return None
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
            return BaseImage(kind="base", ref=ref), ref
    return None


def _setup(sink: Sink, node: YNode | None, path: str) -> list[SetupEntry]:
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
        cache_node = entry.get("cache")
        cache = _cache(sink, cache_node, join(here, "cache")) if cache_node is not None else None
        if name is None or commands is None or (cache_node is not None and cache is None):
            continue  # reported
        out.append(SetupEntry(name=name, commands=tuple(commands), cache=cache))
    return out


def _cache(sink: Sink, node: YNode, path: str) -> SetupEntryCache | None:
    entry = strict_map(
        sink, node, path, allowed=("key", "files", "paths"), required=("key",), what="a setup cache"
    )
    if entry is None:
        return None
    key = opt_str(sink, entry.get("key"), join(path, "key"), pattern=NAME_RE, rule=NAME_RULE)
    files = opt_str_list(sink, entry.get("files"), join(path, "files")) or []
    for index, item in _strings(entry.get("files")):
        if item.value.startswith("/") or ".." in item.value.split("/"):
            sink.error(
                item.loc,
                join(join(path, "files"), index),
                f"{item.value!r} must be a relative path inside the workspace, without '..'",
            )
        elif item.value != item.value.strip():
            sink.error(
                item.loc,
                join(join(path, "files"), index),
                f"{item.value!r} starts or ends with whitespace (a typo, most likely)",
            )
    paths = opt_str_list(sink, entry.get("paths"), join(path, "paths")) or []
    for index, item in _strings(entry.get("paths")):
        normal = posixpath.normpath(item.value)
        if (
            ".." in item.value.split("/")
            or not item.value.startswith("/home/user/")
            or not normal.startswith("/home/user/")
        ):
            sink.error(
                item.loc,
                join(join(path, "paths"), index),
                f"{item.value!r} must be an absolute path under /home/user, spelled "
                "/home/user/…, without '..'",
            )
    if key is None:
        return None
    return SetupEntryCache(key=key, files=tuple(files), paths=tuple(paths))


def _strings(node: YNode | None) -> list[tuple[int, YScalar]]:
    """The string items of a list node with their indexes (others are reported elsewhere)."""
    if not isinstance(node, YSeq):
        return []
    return [
        (index, item)
        for index, item in enumerate(node.items)
        if isinstance(item, YScalar) and isinstance(item.value, str) and item.value.strip()
    ]


def _setup_cache(sink: Sink, node: YNode, path: str) -> SetupCache | None:
    entry = strict_map(sink, node, path, allowed=("ttl",), required=("ttl",), what="setupCache")
    if entry is None:
        return None
    ttl = opt_str(
        sink,
        entry.get("ttl"),
        join(path, "ttl"),
        pattern=TTL_RE,
        rule="a duration like 30m, 24h or 7d ([1-9][0-9]*(s|m|h|d))",
    )
    return None if ttl is None else SetupCache(written=ttl)


def _resources(sink: Sink, node: YNode, path: str) -> Resources | None:
    entry = strict_map(sink, node, path, allowed=("cpuCount", "memoryMB"), what="resources")
    if entry is None:
        return None
    if not entry.entries:
        sink.error(entry.loc, path, "set at least one of cpuCount, memoryMB")
    cpu = opt_int(sink, entry.get("cpuCount"), join(path, "cpuCount"), minimum=1)
    memory = opt_int(sink, entry.get("memoryMB"), join(path, "memoryMB"), minimum=128)
    return Resources(cpu_count=cpu, memory_mb=memory)


def compile_env_map(
    sink: Sink, node: YNode | None, path: str, secrets: list[SecretUse]
) -> dict[str, EnvValue]:
    """An env map: keys ``[A-Za-z_][A-Za-z0-9_]*`` the sandbox does not set itself, values a
    string or ``{$secret, optional}``."""
    if node is None:
        return {}
    if not isinstance(node, YMap):
        sink.error(node.loc, path, f"must be a map of variables, got {describe(node)}")
        return {}
    out: dict[str, EnvValue] = {}
    for key, (key_loc, value) in node.entries.items():
        here = join(path, key)
        if not ENV_KEY_RE.fullmatch(key):
            sink.error(
                key_loc, here, f"{key!r} is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"
            )
            continue
        if protected_env_name(key):
            sink.error(
                key_loc,
                here,
                f"{key} is the sandbox's own (HOME, XDG_*, the dynamic loader's LD_* and its "
                "other security settings): a session's env cannot set it",
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
        out[key] = SecretRef(secret=secret, optional=bool(optional))
        if not optional:
            secret_node = ref.get("$secret")
            assert secret_node is not None
            secrets.append(SecretUse(secret, secret_node.loc, join(here, "$secret")))
    return out
