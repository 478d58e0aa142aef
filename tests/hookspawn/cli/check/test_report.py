"""`hookspawn check` output: run_check text and JSON, exit codes, and the CLI end to end."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookspawn.cli.check.report import run_check
from tests.agents.conftest import BASE, Tree

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples" / ".auto"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # `check` names files as they open from here: .auto/...


UNMOUNTED_LINE = "  unmounted repositories (HOOKSPAWN_UNMOUNTED_CAPABILITIES=default): "


def check(tree: Tree, *, as_json: bool = False, secrets: tuple[str, ...] = ()) -> tuple[int, str]:
    out = io.StringIO()
    code = run_check(tree.root, as_json=as_json, secret_names=secrets, out=out)
    return code, out.getvalue()


def test_success_lists_each_agent(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "triggers:\n  - {kind: github, event: push}\n")
    tree.write(
        "agents/b.yaml",
        BASE.replace("name: a", "name: b")
        + "mounts:\n"
        + "  - {kind: git, repository: o/r, mountPath: /w, ref: 'x{{payload.github.after}}'}\n"
        + "triggers:\n  - {kind: github, event: push}\n  - {kind: github, event: create}\n",
    )
    code, text = check(tree)
    assert code == 0
    assert text.splitlines() == [
        "a: harness claude-code, environment runtime, 1 trigger, event-dependent no",
        f"{UNMOUNTED_LINE}no GitHub tool (no githubApp mount)",
        "b: harness claude-code, environment runtime, 2 triggers, event-dependent yes",
        "  /w: o/r @ x{{payload.github.after}} (auth none)",
        f"{UNMOUNTED_LINE}no GitHub tool (no githubApp mount)",
        "ok: 2 agents compiled",
    ]


def test_errors_one_per_line_and_exit_one(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "mounts:\n  - {kind: git, repository: o/r, mountPath: w}\n")
    code, text = check(tree)
    assert code == 1
    lines = text.splitlines()
    assert (
        ".auto/agents/a.yaml:7: mounts.0.mountPath: 'w' must be an absolute path (start with /)"
        in lines
    )
    assert (
        ".auto/agents/a.yaml:7: warning: mounts.0.ref: "
        "no ref: the checkout is whatever FETCH_HEAD points at; set ref explicitly" in lines
    )
    assert lines[-1] == "1 error"
    assert not any("harness" in line for line in lines)


def test_warnings_alone_exit_zero(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "mounts:\n  - {kind: git, repository: o/r, mountPath: /w}\n")
    code, text = check(tree)
    assert code == 0
    assert "warning: mounts.0.ref" in text


def test_json_output(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "env: {T: {$secret: tok}}\n")
    code, text = check(tree, as_json=True, secrets=("tok",))
    body = json.loads(text)
    assert code == 0
    assert body["ok"] is True
    assert [a["name"] for a in body["agents"]] == ["a"]
    assert body["agents"][0]["environmentResource"]["name"] == "runtime"
    assert body["errors"] == [] and body["warnings"] == []
    code, text = check(tree, as_json=True, secrets=("other",))
    body = json.loads(text)
    assert code == 1 and body["ok"] is False
    assert body["errors"] == [
        {
            "file": ".auto/agents/a.yaml",
            "line": 6,
            "path": "env.T.$secret",
            "message": "secret 'tok' is not declared (HOOKSPAWN_SECRET_NAMES); "
            "mark it optional: true if it may be absent",
            "severity": "error",
        }
    ]


def test_examples_compile_cleanly() -> None:
    out = io.StringIO()
    assert run_check(EXAMPLES, as_json=False, secret_names=(), out=out) == 0, out.getvalue()
    assert "warning" not in out.getvalue()


#: the installed console script of the interpreter running the tests
CLI = Path(sys.executable).parent / "hookspawn"


@pytest.mark.slow
def test_cli_check_runs_on_the_examples(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [str(CLI), "check", str(EXAMPLES), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["ok"] is True
    assert sorted(a["name"] for a in body["agents"]) == ["fix-command", "nightly-deps", "pr-review"]
    bad = tmp_path / ".auto" / "agents"
    bad.mkdir(parents=True)
    (bad / "x.yaml").write_text("name: x\n")
    done = subprocess.run(
        [str(CLI), "check", str(tmp_path / ".auto")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert ".auto/agents/x.yaml:1: harness: required field 'harness' is missing" in done.stdout


def test_check_names_an_ungranted_tool_and_why_and_still_succeeds(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        BASE
        + "mounts:\n"
        + "  - kind: git\n    repository: acme/w\n    mountPath: /w\n    ref: main\n"
        + "    auth: {kind: githubApp, capabilities: {contents: read, pullRequests: read, "
        + "issues: read}}\n"
        + "tools:\n  - kind: github\n    allow: [get_issue, merge_pull_request]\n",
    )
    code, text = check(tree)
    assert code == 0, text
    assert (
        ".auto/agents/a.yaml:14: warning: tools.0.allow.1: merge_pull_request needs a githubApp "
        "mount granting merge: write, and no mount does: the session never sees it"
    ) in text
    assert "ok: 1 agent compiled" in text
    strict = io.StringIO()
    assert run_check(tree.root, as_json=False, secret_names=(), out=strict, strict=True) == 1
