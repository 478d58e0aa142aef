"""`hookspawn check` on what is not a .auto directory, and how it names files and problems."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from hookspawn.cli import main
from tests.agents.conftest import BASE

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / ".auto"


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def check(*args: str, cwd: Path) -> Done:
    """`hookspawn check ARGS` run in `cwd` (in this process: a new interpreter per call would
    make these tests slow; the CLI as a subprocess is tested in test_cli_behaviour)."""
    before = Path.cwd()
    out, err = io.StringIO(), io.StringIO()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["check", *args])
    finally:
        os.chdir(before)
    return Done(code, out.getvalue(), err.getvalue())


def one_error_line(done: Done) -> str:
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def test_a_missing_directory_is_one_line_naming_what_was_expected(tmp_path: Path) -> None:
    line = one_error_line(check("nowhere", cwd=tmp_path))
    assert line == (
        "hookspawn check: nowhere: no such directory "
        "(expected the .auto directory that holds agents/*.yaml)"
    )


def test_the_default_directory_missing_is_named(tmp_path: Path) -> None:
    line = one_error_line(check(cwd=tmp_path))
    assert line.startswith("hookspawn check: .auto: no such directory")


def test_an_empty_directory_says_agents_is_missing_and_how_to_start(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    line = one_error_line(check("empty", cwd=tmp_path))
    assert line == (
        "hookspawn check: empty: no agents/ folder (expected the .auto directory that holds "
        "agents/*.yaml; `hookspawn init empty` writes a starter set)"
    )
    assert ":1:" not in line and "ok:" not in line


def test_an_agents_folder_without_agent_files(tmp_path: Path) -> None:
    (tmp_path / ".auto" / "agents").mkdir(parents=True)
    line = one_error_line(check(".auto", cwd=tmp_path))
    assert line == (
        "hookspawn check: .auto/agents: no agent files "
        "(expected the .auto directory that holds agents/*.yaml)"
    )


def test_the_agents_folder_given_instead_names_the_directory_above(tmp_path: Path) -> None:
    agents = tmp_path / "repo" / ".auto" / "agents"
    agents.mkdir(parents=True)
    (agents / "a.yaml").write_text(BASE)
    line = one_error_line(check("repo/.auto/agents", cwd=tmp_path))
    assert line == (
        "hookspawn check: repo/.auto/agents: this is the agents/ folder; "
        "pass the .auto directory above it: repo/.auto"
    )
    assert check("repo/.auto", cwd=tmp_path).returncode == 0


def test_a_file_instead_of_a_directory(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(BASE)
    line = one_error_line(check("agent.yaml", cwd=tmp_path))
    assert line.startswith("hookspawn check: agent.yaml: not a directory (expected the .auto")


def write(root: Path, name: str, text: str) -> None:
    path = root / ".auto" / "agents" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_files_are_named_as_they_open_from_the_current_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project, "a.yaml", "name: a\nharness: gpt\n")
    for cwd, given, shown in [
        (project, ".auto", ".auto/agents/a.yaml"),
        (tmp_path, "project/.auto", "project/.auto/agents/a.yaml"),
        (project / ".auto", ".", "agents/a.yaml"),
        (project / ".auto" / "agents", "..", "a.yaml"),
    ]:
        done = check(given, cwd=cwd)
        assert done.returncode == 1
        assert f"\n{shown}:2: harness: " in "\n" + done.stdout, (cwd, given, done.stdout)
        assert (cwd / shown).is_file()
    # outside the current directory: the absolute path
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = check(str(project / ".auto"), cwd=elsewhere)
    assert f"\n{project}/.auto/agents/a.yaml:2: harness: " in "\n" + done.stdout


def test_yaml_errors_point_at_the_broken_line_without_a_placeholder(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", BASE + "mounts:\n  - kind: git\n   bad: indent\n")
    write(tmp_path, "b.yaml", "name: b\nharness: [claude-code\n  environment: x\n")
    done = check(".auto", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith(".auto/agents/a.yaml:8: invalid YAML: ")
    assert lines[1] == (
        ".auto/agents/b.yaml:3: invalid YAML: did not find expected ',' or ']' "
        "(while parsing a flow sequence started at line 2)"
    )
    assert lines[-1] == "2 errors"
    assert "(file)" not in done.stdout
    body = json.loads(check(".auto", "--json", cwd=tmp_path).stdout)
    assert [(e["file"], e["line"], e["path"]) for e in body["errors"]] == [
        (".auto/agents/a.yaml", 8, None),
        (".auto/agents/b.yaml", 3, None),
    ]


@pytest.mark.parametrize(
    ("count", "summary"), [(1, "ok: 1 agent compiled"), (2, "ok: 2 agents compiled")]
)
def test_plurals(tmp_path: Path, count: int, summary: str) -> None:
    for index in range(count):
        write(tmp_path, f"a{index}.yaml", BASE.replace("name: a", f"name: a{index}"))
    done = check(".auto", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[-1] == summary
    assert "0 triggers" in done.stdout
    write(tmp_path, "bad.yaml", "name: bad\n")
    assert check(".auto", cwd=tmp_path).stdout.splitlines()[-1] == "2 errors"


@pytest.mark.slow
def test_the_examples_pass_strict(tmp_path: Path) -> None:
    done = check(str(EXAMPLES), "--strict", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[-1] == "ok: 3 agents compiled"


def test_files_named_inside_messages_open_from_here_too(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project, "a.yaml", BASE + "imports: [../fragments/missing.yaml, ../fragments/b.yaml]\n")
    fragments = project / ".auto" / "fragments"
    fragments.mkdir()
    (fragments / "b.yaml").write_text("imports: [c.yaml]\n")
    (fragments / "c.yaml").write_text("imports: [b.yaml]\n")
    done = check("project/.auto", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert (
        "project/.auto/agents/a.yaml:6: imports.0: '../fragments/missing.yaml': "
        "no such file (project/.auto/fragments/missing.yaml)"
    ) in lines
    assert (
        "project/.auto/fragments/c.yaml:1: imports.0: import cycle: "
        "project/.auto/fragments/b.yaml → project/.auto/fragments/c.yaml → "
        "project/.auto/fragments/b.yaml"
    ) in lines


def test_the_examples_say_which_agents_run_the_same_setup_and_where_each_snapshot_goes(
    tmp_path: Path,
) -> None:
    lines = check(str(EXAMPLES), cwd=tmp_path).stdout.splitlines()
    start = lines.index("snapshots: fix-command, pr-review run the same setup")
    assert lines[start + 1] == (
        "  fix-command: saves into branch:acme/widgets@main; saves and restores there"
    )
    assert lines[start + 2].startswith(
        "  pr-review: saves into pull:acme/widgets#N (pull-request code; N: its pull request); "
        "restores only from its base branch's scope (privileged: "
    )
    assert "env TS_AUTHKEY: $secret" in lines[start + 2]
    assert lines[start + 3] == "  none of them shares a snapshot: their refs or auth differ"
    body = json.loads(check(str(EXAMPLES), "--json", cwd=tmp_path).stdout)
    (group,) = body["snapshots"]
    assert (group["agents"], group["shared"]) == (["fix-command", "pr-review"], [])
    assert group["scopes"]["fix-command"] == "branch:acme/widgets@main"


SETUP_AGENT = """\
environment:
  name: shared
  image: {kind: preset, name: node24}
  setup: [{name: deps, commands: [npm ci]}]
mounts:
  - {kind: git, repository: acme/widgets, mountPath: /w, ref: main, auth: {kind: none}}
"""


def test_agents_with_the_same_setup_ref_and_auth_share_one_snapshot(tmp_path: Path) -> None:
    for name in ("one", "two"):
        write(tmp_path, f"{name}.yaml", f"name: {name}\nharness: claude-code\n" + SETUP_AGENT)
    other = SETUP_AGENT.replace("ref: main", "ref: '{{payload.github.pullRequest.head.sha}}'")
    write(tmp_path, "three.yaml", "name: three\nharness: claude-code\n" + other)
    lines = check(".auto", cwd=tmp_path).stdout.splitlines()
    assert "snapshots: one, three, two run the same setup" in lines
    assert "  one and two share one snapshot in branch:acme/widgets@main" in lines
    assert (
        "  three: saves into the ref the event names (acme/widgets at "
        "{{payload.github.pullRequest.head.sha}}): a branch scope when the event shows it is a "
        "branch of the repository, else its pull request's; restores from there, else (as "
        "pull-request code) from its base branch's scope"
    ) in lines
