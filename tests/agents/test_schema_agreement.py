"""The editor schema (agents.file_schema) and the compiler agree, field by field: an agent file
that differs from a valid one in one constrained field passes the schema exactly when it
compiles. Each field gets the values its constraints make interesting (boundaries, `..`,
whitespace at either end, a final newline, protected names in any case, integral floats) and
generated ones from an alphabet of the characters those rules look at."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import compile_dir
from tests.agents.conftest import SCHEMAS

#: an agent file that passes the schema and compiles, with every field under test present
VALID: dict[str, Any] = {
    "name": "a",
    "harness": "claude-code",
    "environment": {
        "name": "runtime",
        "image": {"kind": "preset", "name": "node24"},
        "setup": [
            {
                "name": "deps",
                "commands": ["npm ci"],
                "cache": {
                    "key": "deps",
                    "files": ["package-lock.json"],
                    "paths": ["/home/user/.npm"],
                },
            }
        ],
        "setupCache": {"ttl": "7d"},
        "resources": {"cpuCount": 2, "memoryMB": 2048},
        "env": {"ENV_VAR": "x", "TOKEN": {"$secret": "token", "optional": True}},
    },
    "mounts": [
        {
            "kind": "git",
            "name": "repo",
            "repository": "octo/repo",
            "mountPath": "/workspace/repo",
            "ref": "main",
            "depth": 1,
            "auth": {
                "kind": "githubApp",
                "installationId": "12",
                "commitAuthor": {"name": "bot", "email": "bot@example.com"},
                "capabilities": {"contents": "read", "pullRequests": "none", "issues": "none"},
            },
        }
    ],
    "triggers": [{"event": "push", "name": "on-push"}],
    "env": {"AGENT_VAR": "y"},
}


def _env_key(where: tuple[str, ...]) -> Callable[[dict[str, Any], object], None]:
    def put(doc: dict[str, Any], value: object) -> None:
        holder = doc
        for key in where[:-1]:
            holder = holder[key]
        holder[where[-1]] = {value: "v"}

    return put


def _at(*where: str | int) -> Callable[[dict[str, Any], object], None]:
    def put(doc: dict[str, Any], value: object) -> None:
        holder: Any = doc
        for key in where[:-1]:
            holder = holder[key]
        holder[where[-1]] = value

    return put


_CACHE = ("environment", "setup", 0, "cache")
#: each field under test → how to put a value there
FIELDS: dict[str, Callable[[dict[str, Any], object], None]] = {
    "env key": _env_key(("env",)),
    "environment.env key": _env_key(("environment", "env")),
    "mountPath": _at("mounts", 0, "mountPath"),
    "depth": _at("mounts", 0, "depth"),
    "repository": _at("mounts", 0, "repository"),
    "cpuCount": _at("environment", "resources", "cpuCount"),
    "memoryMB": _at("environment", "resources", "memoryMB"),
    "cache file": _at(*_CACHE, "files", 0),
    "cache path": _at(*_CACHE, "paths", 0),
    "cache key": _at(*_CACHE, "key"),
    "setup name": _at("environment", "setup", 0, "name"),
    "ttl": _at("environment", "setupCache", "ttl"),
    "environment name": _at("environment", "name"),
    "image ref": lambda doc, value: _at("environment", "image")(
        doc, {"kind": "base", "ref": value}
    ),
    "secret name": _at("environment", "env", "TOKEN", "$secret"),
    "installationId": _at("mounts", 0, "auth", "installationId"),
    "email": _at("mounts", 0, "auth", "commitAuthor", "email"),
    "event": _at("triggers", 0, "event"),
    "action": lambda doc, value: _at("triggers", 0, "actions")(doc, [value]),
    "trigger name": _at("triggers", 0, "name"),
}
_STRINGS = {field for field in FIELDS if field not in ("depth", "cpuCount", "memoryMB")}

#: the values each field's rules make interesting, and the cases found to disagree before
HOSTILE: dict[str, list[object]] = {
    "env key": [
        "HOME",
        "home",
        "LD_PRELOAD",
        "ld_preload",
        "LD_AUDIT",
        "XDG_CONFIG_HOME",
        "xdg_x",
        "HOOKSPAWN_TOKEN",
        "Hookspawn_x",
        "SRT_X",
        "GIT_CONFIG_GLOBAL",
        "HTTPS_PROXY",
        "TMPDIR",
        "HOMER",
        "MY_HOME",
        "XDG",
        "HOOKSPAWN",
        "_",
        "A1",
        "1A",
        "A-B",
        "A\n",
        "",
        "Ä",
    ],
    "mountPath": [
        "/",
        "/.",
        "/..",
        "/../etc",
        "//",
        "/./",
        "/./.",
        "/a/..",
        "/a/../b",
        "/...",
        "/a/.",
        "/.a",
        "/a b",
        "/a\n",
        "/a\t",
        "/a\x01",
        "a",
        "",
        "/workspace//repo/",
        "/ a",
    ],
    "cache path": [
        "/home/user/../etc/x",
        "/home/user/..",
        "/home/user/x/../../etc",
        "/home/user/",
        "/home/user/.",
        "/home/user/./",
        "/home/user//",
        "/home/user",
        "/home/user/x",
        "/home/user/x/",
        "/home/user/x/.",
        "/home/user/a.",
        "/home/user/.x",
        "/home//user/x",
        "/home/./user/x",
        "//home/user/x",
        "/home/user/x\n",
        "/home/user/ x",
        "home/user/x",
        "/home/user/x/..",
        "/home/user/...",
    ],
    "cache file": [
        " a",
        "a ",
        " ",
        "a b",
        "a\n",
        "\na",
        "/a",
        "..",
        "../a",
        "a/..",
        "a/../b",
        "...",
        ".a",
        "a/",
        "./a",
        "a\x01b",
        "",
    ],
    "depth": [1, 0, -1, 1.0, 2.0, 1.5, 0.0, True, False, "1", None, 10**6],
    "cpuCount": [1, 0, 1.0, 2.0, 0.5, True, "2"],
    "memoryMB": [128, 127, 2048.0, 127.0, 128.5, False, "2048"],
    "event": ["push", "pull_request", "pull_requests", "pull_request_target", "Push", "push\n"],
    "action": ["opened", "Opened", "a.b-c", "-a", "opened\n", "", 1],
    "ttl": ["7d", "0d", "10m", "1y", "7d\n", " 7d", "7"],
    "environment name": ["runtime", " runtime ", "run time", "a" * 128, "a" * 129, "\n", ""],
    "image ref": ["node:24", " node:24 ", "-x", "a#b", "a\\b", "a b", "x" * 512, "x" * 513],
    "secret name": ["token", "a.b-c_d", "a b", "a\n", "x" * 128, "x" * 129, ""],
    "installationId": ["1", "0", "01", "x", " 1", "1\n", "9" * 20, "9" * 21, 12],
    "email": ["a@b", "a@@b", "@b", "a@", "a b@c", "a@b\n", "a@b.c"],
}
_ALPHABET = "aZ09_-./~ \t\n\x00\x01éHOMEXDG:@"


def _values(field: str) -> st.SearchStrategy[object]:
    listed = st.sampled_from(HOSTILE.get(field, ["ok", ""]))
    if field not in _STRINGS:
        numbers = st.one_of(
            st.integers(-3, 4096), st.floats(-2, 4096, allow_nan=False), st.booleans()
        )
        return st.one_of(listed, numbers, st.text(alphabet="0123456789.", max_size=5))
    text = st.text(alphabet=_ALPHABET, max_size=14)
    if field.endswith("key"):
        return st.one_of(listed, text)  # a map's keys are strings
    return st.one_of(listed, text, st.integers(-2, 3))


def _verdicts(field: str, value: object, root: Path) -> tuple[list[str], list[str]]:
    """What the schema says of the file with `value` in `field`, and what the compiler says."""
    doc = copy.deepcopy(VALID)
    FIELDS[field](doc, value)
    path = root / "agents" / "a.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, allow_unicode=False))
    assert yaml.safe_load(path.read_text()) == doc  # YAML carried the value unchanged
    schema = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in SCHEMAS["agent"].iter_errors(doc)
    ]
    compiled = [str(d) for d in compile_dir(root).errors]
    return schema, compiled


def _assert_agree(field: str, value: object, root: Path) -> None:
    schema, compiled = _verdicts(field, value, root)
    assert bool(schema) == bool(compiled), (
        f"{field} = {value!r}: the schema says {schema or 'valid'}, "
        f"the compiler {compiled or 'compiles'}"
    )


def test_the_valid_file_passes_both(tmp_path: Path) -> None:
    assert _verdicts("depth", 1, tmp_path / ".auto") == ([], [])


@pytest.mark.parametrize(
    ("field", "value"), [(field, value) for field, values in HOSTILE.items() for value in values]
)
def test_schema_and_compiler_agree_on_each_hostile_value(
    tmp_path: Path, field: str, value: object
) -> None:
    _assert_agree(field, value, tmp_path / ".auto")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FIELDS)).flatmap(lambda f: st.tuples(st.just(f), _values(f))))
def test_schema_and_compiler_agree_on_generated_values(case: tuple[str, object]) -> None:
    field, value = case
    with tempfile.TemporaryDirectory() as tmp:
        _assert_agree(field, value, Path(tmp) / ".auto")


@pytest.mark.parametrize(
    ("field", "value", "valid"),
    [
        ("env key", "HOME", False),
        ("env key", "LD_PRELOAD", False),
        ("environment.env key", "XDG_CACHE_HOME", False),
        ("env key", "HOOKSPAWN_X", False),
        ("mountPath", "/", False),
        ("mountPath", "/.", False),
        ("mountPath", "/..", False),
        ("mountPath", "/../etc", False),
        ("cache path", "/home/user/../etc/x", False),
        ("cache file", " a", False),
        ("depth", 1.0, True),
        ("memoryMB", 2048.0, True),
        ("depth", 1.5, False),
        ("event", "pull_requests", False),
    ],
)
def test_the_cases_found_to_disagree_now_have_one_verdict(
    tmp_path: Path, field: str, value: object, valid: bool
) -> None:
    schema, compiled = _verdicts(field, value, tmp_path / ".auto")
    assert (schema == [], compiled == []) == (valid, valid), (schema, compiled)
