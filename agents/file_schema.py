"""The JSON Schema (draft 2020-12) of an agent or fragment file as written, before imports merge.

Built from the compiler's own constants (allowed keys, enums, patterns, defaults), so editors
and `hookspawn check` agree on what a field may hold. It describes one file: fields that
imports may supply are not required (only an agent file's `name` is), and maps that merge
deep (a mount, its auth, an inline environment) may be partial. The compiler stays the judge
of the merged result (cross-field rules, templates, globs).
"""

from __future__ import annotations

import re
from typing import Any

from agents.compiler import _AGENT_KEYS
from agents.environment_spec import DEFAULT_SETUP_CACHE_TTL, TTL_RE
from agents.environments import _ENV_KEYS, PRESETS
from agents.file_descriptions import TEXT
from agents.github_events import GITHUB_EVENTS
from agents.import_resolver import DIRECTIVES
from agents.merge import REMOVABLE
from agents.model import CAPABILITY_FIELDS, Capabilities
from agents.mounts import _MOUNT_KEYS, BARE_RE, INSTALLATION_RE
from agents.sandbox.env import PROTECTED_ENV_NAMES, PROTECTED_ENV_PREFIXES
from agents.triggerdefs import _OPS, _TRIGGER_KEYS, ACTION_RE, FILTER_PATH_RE, MAX_PATTERN

__all__ = ["KINDS", "file_schema"]

KINDS = ("agent", "fragment")
DRAFT = "https://json-schema.org/draft/2020-12/schema"

# Patterns hold in ECMA 262 (editors) and Python's re (jsonschema) alike. `$` would also match
# before a final newline in Python, so a value ends where nothing follows: `(?![\s\S])`.
_END = r"(?![\s\S])"
_NAME = rf"^[A-Za-z0-9_.-]{{1,128}}{_END}"
_NAME_TRIMMED = rf"^\s*[A-Za-z0-9_.-]{{1,128}}\s*{_END}"  # the compiler trims these names first
_NON_EMPTY = r"\S"
_REPOSITORY = rf"^(?:{BARE_RE.pattern}|https://[^\s/]+/\S+|git@[^\s:]+:\S+){_END}"
#: no `..` segment anywhere (put right after `^`)
_NO_DOTDOT = rf"(?![\s\S]*(?:^|/)\.\.(?:/|{_END}))"
#: what follows is not only empty and `.` segments: the path names a directory below
_BELOW = rf"(?!(?:\.?/)*\.?{_END})"
#: absolute, no `..`, no whitespace or control character, not `/` itself once normalised
_MOUNT_PATH = rf"^{_NO_DOTDOT}/{_BELOW}[^\s\x00-\x1f]*{_END}"
#: relative, no `..`, neither starting nor ending with whitespace
_RELATIVE_FILE = rf"^(?!/){_NO_DOTDOT}\S(?:[\s\S]*\S)?{_END}"
#: spelled /home/user/…, no `..`, naming something below /home/user
_HOME_PATH = rf"^{_NO_DOTDOT}/home/user/{_BELOW}"
_ENV_KEY = rf"^[A-Za-z_][A-Za-z0-9_]*{_END}"
_BASE_REF = rf"^\s*(?!-)[^\s#\\]{{1,512}}\s*{_END}"


def _any_case(text: str) -> str:
    """`text` as a pattern matching it in any letter case (ECMA 262 has no inline `(?i)`)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in text)


#: the variables the sandbox sets itself (agents.sandbox.env), compared case-insensitively
_PROTECTED_ENV = (
    "^(?:(?:"
    + "|".join(_any_case(n) for n in sorted(PROTECTED_ENV_NAMES))
    + f"){_END}|"
    + "|".join(_any_case(p) for p in PROTECTED_ENV_PREFIXES)
    + ")"
)


def _d(key: str, schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the description of field `key` (agents.file_descriptions)."""
    return {"description": TEXT[key], **schema}


def _string(key: str, pattern: str = _NON_EMPTY, **more: Any) -> dict[str, Any]:
    return _d(key, {"type": "string", "pattern": pattern, **more})


def _strings(key: str, item: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    items = item or {"type": "string", "pattern": _NON_EMPTY}
    return _d(key, {"type": "array", "items": items, **more})


def _object(
    key: str, properties: dict[str, Any], *, required: tuple[str, ...] = (), **more: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        body["required"] = list(required)
    body["additionalProperties"] = False
    return _d(key, {**body, **more})


def _capabilities() -> dict[str, Any]:
    defaults = Capabilities()
    properties = {}
    for attr, key, _ in CAPABILITY_FIELDS:
        levels = ["none", "write"] if key == "merge" else ["none", "read", "write"]
        properties[key] = _d(
            f"capabilities.{key}",
            {"enum": levels, "default": getattr(defaults, attr)},
        )
    return _object("auth.capabilities", properties, default=defaults.to_json())


def _auth() -> dict[str, Any]:
    properties = {
        "kind": _d("auth.kind", {"enum": ["none", "githubApp"]}),
        "installationId": _string("auth.installationId", rf"^{INSTALLATION_RE.pattern}{_END}"),
        "commitAuthor": _object(
            "auth.commitAuthor",
            {
                "name": _string("commitAuthor.name"),
                "email": _string("commitAuthor.email", rf"^[^@\s]+@[^@\s]+{_END}"),
            },
        ),
        "capabilities": _capabilities(),
    }
    # kind none takes nothing else (after the merge, too: a file writing both is wrong)
    none_alone = {
        "if": {"properties": {"kind": {"const": "none"}}, "required": ["kind"]},
        "then": {"maxProperties": 1},
    }
    return _object("mount.auth", properties, default={"kind": "none"}, allOf=[none_alone])


def _mount() -> dict[str, Any]:
    properties = {
        "kind": _d("mount.kind", {"enum": ["git"]}),
        "name": _string("mount.name"),
        "repository": _string("mount.repository", _REPOSITORY),
        "mountPath": _string("mount.mountPath", _MOUNT_PATH),
        "ref": _string("mount.ref"),
        "depth": _d("mount.depth", {"type": "integer", "minimum": 1, "default": 1}),
        "auth": {"$ref": "#/$defs/auth"},
    }
    assert set(properties) == set(_MOUNT_KEYS)
    # a mount merges into an imported one by name, else by mountPath: it names one of them
    keyed = [{"required": ["name"]}, {"required": ["mountPath"]}]
    return _object("mount", properties, anyOf=keyed)


def _filter() -> dict[str, Any]:
    properties = {
        "path": _string("filter.path", rf"^{FILTER_PATH_RE.pattern}{_END}"),
        "equals": _d("filter.equals", {}),
        "in": _d("filter.in", {"type": "array"}),
        "matches": _d("filter.matches", {"type": "string", "maxLength": MAX_PATTERN}),
        "exists": _d("filter.exists", {"type": "boolean"}),
    }
    assert set(properties) == {"path", *_OPS}
    one_op = [{"required": [op]} for op in _OPS]
    return _object("filter", properties, required=("path",), oneOf=one_op)


def _trigger() -> dict[str, Any]:
    properties = {
        "kind": _d("trigger.kind", {"enum": ["github"], "default": "github"}),
        "event": _d("trigger.event", {"enum": sorted(GITHUB_EVENTS)}),
        "actions": _strings(
            "trigger.actions",
            {"type": "string", "pattern": rf"^{ACTION_RE.pattern}{_END}"},
            minItems=1,
        ),
        "repositories": _strings("trigger.repositories", minItems=1),
        "branches": _strings("trigger.branches", minItems=1),
        "filters": _d("trigger.filters", {"type": "array", "items": {"$ref": "#/$defs/filter"}}),
        "name": _string("trigger.name", _NAME),
        "bots": _d("trigger.bots", {"type": "boolean", "default": False}),
        "displayTitle": _d("trigger.displayTitle", {"type": "string"}),
        "initialPrompt": _d("trigger.initialPrompt", {"type": "string"}),
        "message": _d("trigger.message", {"type": "string"}),
    }
    assert set(properties) == set(_TRIGGER_KEYS)
    return _object("trigger", properties, required=("event",))


def _tool() -> dict[str, Any]:
    properties = {
        "kind": _d("tool.kind", {"enum": ["github"]}),
        "allow": _strings("tool.allow"),
    }
    return _object("tool", properties, required=("kind",))


def _env_map(key: str) -> dict[str, Any]:
    secret = _object(
        "secret",
        {
            "$secret": _string("secret.name", _NAME),
            "optional": _d("secret.optional", {"type": "boolean", "default": False}),
        },
        minProperties=1,
    )
    value = {"oneOf": [{"type": "string"}, secret]}
    return _d(
        key,
        {
            "type": "object",
            "propertyNames": {"pattern": _ENV_KEY, "not": {"pattern": _PROTECTED_ENV}},
            "additionalProperties": value,
            "default": {},
        },
    )


def _image() -> dict[str, Any]:
    properties = {
        "kind": _d("image.kind", {"enum": ["preset", "base"]}),
        "name": _d("image.name", {"enum": list(PRESETS)}),
        "ref": _string("image.ref", _BASE_REF),
    }
    shapes = [
        {
            "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
            "then": {"properties": {other: False}},
        }
        for kind, other in (("preset", "ref"), ("base", "name"))
    ]
    return _object("environment.image", properties, allOf=shapes)


def _setup_entry() -> dict[str, Any]:
    cache = _object(
        "setup.cache",
        {
            "key": _string("cache.key", _NAME),
            "files": _strings(
                "cache.files", {"type": "string", "pattern": _RELATIVE_FILE}, default=[]
            ),
            "paths": _strings("cache.paths", {"type": "string", "pattern": _HOME_PATH}, default=[]),
        },
        required=("key",),
    )
    return _object(
        "setup",
        {
            "name": _string("setup.name", _NAME),
            "commands": _strings("setup.commands", minItems=1),
            "cache": cache,
        },
        required=("name", "commands"),
    )


def _environment() -> dict[str, Any]:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    properties = {
        "name": _string("environment.name", _NAME_TRIMMED),
        "labels": _d("environment.labels", string_map),
        "annotations": _d("environment.annotations", string_map),
        "image": _image(),
        "steps": _strings("environment.steps", default=[]),
        "setup": _d(
            "environment.setup",
            {"type": "array", "items": {"$ref": "#/$defs/setupEntry"}, "default": []},
        ),
        "setupCache": _object(
            "environment.setupCache",
            {"ttl": _string("setupCache.ttl", rf"^{TTL_RE.pattern}{_END}")},
            required=("ttl",),
            default={"ttl": DEFAULT_SETUP_CACHE_TTL},
        ),
        "resources": _object(
            "environment.resources",
            {
                "cpuCount": _d("resources.cpuCount", {"type": "integer", "minimum": 1}),
                "memoryMB": _d("resources.memoryMB", {"type": "integer", "minimum": 128}),
            },
            minProperties=1,
        ),
        "env": _env_map("environment.env"),
        "approval": _d("environment.approval", {"enum": ["bypass", "prompt"], "default": "bypass"}),
    }
    assert set(properties) == set(_ENV_KEYS)
    return _object("environment.inline", properties)


def _remove() -> dict[str, Any]:
    return _object(
        "remove",
        {key: _strings(f"remove.{key}") for key in REMOVABLE},
    )


def file_schema(kind: str = "agent") -> dict[str, Any]:
    """The JSON Schema of an agent file (`agent`) or a fragment file (`fragment`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    properties = {
        "name": _string("agent.name", _NAME),
        "harness": _d("agent.harness", {"enum": ["claude-code", "codex"]}),
        "environment": _d(
            "agent.environment",
            {
                "oneOf": [
                    {"type": "string", "pattern": _NAME_TRIMMED},
                    {"$ref": "#/$defs/environment"},
                ]
            },
        ),
        "mounts": _d(
            "agent.mounts", {"type": "array", "items": {"$ref": "#/$defs/mount"}, "default": []}
        ),
        "triggers": _d(
            "agent.triggers",
            {"type": "array", "items": {"$ref": "#/$defs/trigger"}, "default": []},
        ),
        "workingDirectory": _string("agent.workingDirectory"),
        "systemPrompt": _d("agent.systemPrompt", {"type": "string"}),
        "tools": _d(
            "agent.tools", {"type": "array", "items": {"$ref": "#/$defs/tool"}, "default": []}
        ),
        "env": _env_map("agent.env"),
        "imports": _strings("agent.imports", {"type": "string", "pattern": r"^(?!/)" + _NON_EMPTY}),
        "remove": _remove(),
    }
    assert set(properties) == set(_AGENT_KEYS) and set(DIRECTIVES) <= set(properties)
    schema: dict[str, Any] = {
        "$schema": DRAFT,
        "title": f"hookspawn {kind} file",
        "description": TEXT[f"file.{kind}"],
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if kind == "agent":
        schema["required"] = ["name"]
    schema["$defs"] = {
        "environment": _environment(),
        "setupEntry": _setup_entry(),
        "mount": _mount(),
        "auth": _auth(),
        "trigger": _trigger(),
        "filter": _filter(),
        "tool": _tool(),
    }
    return schema
