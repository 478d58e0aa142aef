"""Safe loading: aliases, bombs, huge files, bad YAML, tags, duplicate keys, deep nesting."""

from __future__ import annotations

import pytest

from agents import MAX_FILE_BYTES
from tests.agents.conftest import BASE, Tree, find

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_billion_laughs_is_refused_quickly(tree: Tree) -> None:
    tree.write("agents/a.yaml", BILLION_LAUGHS)
    result = tree.compile()
    error = find(result.errors, "(file)", "aliases")
    assert (error.file, error.line) == (".auto/agents/a.yaml", 1)
    assert "anchored at line 1" in error.message
    assert len(result.errors) == 1


def test_any_alias_is_refused(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        BASE
        + "env: &e {A: x}\nmounts: []\ntriggers:\n  - &t {kind: github, event: push}\n  - *t\n",
    )
    find(tree.compile().errors, "(file)", "YAML aliases (*name) are not allowed")


def test_recursive_alias_is_refused(tree: Tree) -> None:
    tree.write("agents/a.yaml", "a: &r [*r]\n")
    find(tree.compile().errors, "(file)", "aliases")


def test_alias_as_a_mapping_value_reports_the_line_using_it(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "env: &e {A: x}\nextra:\n  again: *e\n")
    error = find(tree.compile().errors, "(file)", "anchored at line 6")
    assert error.line == 8


def test_anchor_without_alias_is_harmless(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "env: &e {A: x}\n")
    assert tree.compile().ok


def test_ten_megabyte_file_is_refused_without_parsing(tree: Tree) -> None:
    path = tree.write("agents/a.yaml", BASE)
    with path.open("a") as handle:
        handle.write("# padding\n" * 1_000_000)
    assert path.stat().st_size > 10_000_000
    error = find(tree.compile().errors, "(file)", f"larger than {MAX_FILE_BYTES} bytes")
    assert error.line == 1


def test_file_just_under_the_limit_loads(tree: Tree) -> None:
    path = tree.write("agents/a.yaml", BASE)
    with path.open("a") as handle:
        handle.write("#" * (MAX_FILE_BYTES - path.stat().st_size - 1) + "\n")
    assert tree.compile().ok


def test_invalid_yaml_reports_its_line(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "mounts:\n  - kind: git\n   bad: indent\n")
    error = find(tree.compile().errors, "(file)", "invalid YAML")
    assert error.file == ".auto/agents/a.yaml"
    assert error.line == 8


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- a\n- b\n", "must be a mapping, not a list"),
        ("just text\n", "must be a mapping, not a string"),
        ("a: !!python/object:os.system x\n", "is not allowed"),
        ("a: !custom x\n", "is not allowed"),
        ("a: !!set {x: null}\n", "is not allowed"),
        ("a: 1\n---\nb: 2\n", "single document"),
        ("? [a, b]\n: c\n", "plain strings"),
        ("a:" + " [" * 80 + " ]" * 80 + "\n", "nested deeper than 64"),
    ],
)
def test_unusable_documents(tree: Tree, text: str, fragment: str) -> None:
    tree.write("agents/a.yaml", text)
    find(tree.compile().errors, "(file)", fragment)


def test_non_utf8_file(tree: Tree) -> None:
    tree.root.joinpath("agents").mkdir(parents=True)
    tree.root.joinpath("agents/a.yaml").write_bytes(b"name: \xff\xfe\n")
    find(tree.compile().errors, "(file)", "not UTF-8")


def test_duplicate_keys_are_errors(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "env:\n  A: x\n  A: y\n")
    error = find(tree.compile().errors, "env.A", "duplicate key 'A' (first at line 7)")
    assert error.line == 8


def test_empty_file_reports_the_required_fields(tree: Tree) -> None:
    tree.write("agents/a.yaml", "")
    errors = tree.compile().errors
    assert {e.path for e in errors} == {"name", "harness", "environment"}
    assert all(e.line == 1 for e in errors)


def test_all_errors_of_a_run_are_reported(tree: Tree) -> None:
    tree.write("agents/a.yaml", "name: 'bad name'\nharness: gpt\nenvironment: {name: e}\n")
    tree.write("agents/b.yaml", "- not a mapping\n")
    errors = tree.compile().errors
    assert {(e.file, e.path) for e in errors} == {
        (".auto/agents/a.yaml", "name"),
        (".auto/agents/a.yaml", "harness"),
        (".auto/agents/a.yaml", "environment.image"),
        (".auto/agents/b.yaml", "(file)"),
    }
