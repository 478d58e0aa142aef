"""`hookspawn check` says, for each agent, what repositories no mount names would get through
its GitHub tools under HOOKSPAWN_UNMOUNTED_CAPABILITIES, and warns when a pull request from a
fork can start an agent that would write there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.conftest import BASE
from tests.hookspawn.cli.test_check import _no_settings, check, write

__all__ = ["_no_settings"]

#: a reviewer whose own mount only reads code, but writes pull requests (its comments)
REVIEWER = (
    BASE
    + "mounts:\n"
    + "  - kind: git\n    repository: acme/widgets\n    mountPath: /w\n    ref: main\n"
    + "    auth:\n      kind: githubApp\n"
    + "      capabilities: {contents: read, pullRequests: write, issues: none, actions: none}\n"
    + "triggers:\n"
    + "  - {kind: github, event: push}\n"
    + "  - {kind: github, event: pull_request, actions: [opened]}\n"
)
#: the same, started only by people with a role in the repository
TRUSTED = REVIEWER.replace("name: a", "name: trusted").replace(
    "actions: [opened]}",
    "actions: [opened], filters: [{path: github.pullRequest.authorAssociation, "
    "in: [OWNER, MEMBER]}]}",
)
HEAD = "  unmounted repositories (HOOKSPAWN_UNMOUNTED_CAPABILITIES="


def _tree(tmp_path: Path) -> Path:
    write(tmp_path, "a.yaml", REVIEWER)
    write(tmp_path, "trusted.yaml", TRUSTED)
    write(tmp_path, "plain.yaml", BASE.replace("name: a", "name: plain"))
    return tmp_path


@pytest.mark.parametrize(
    ("setting", "got"),
    [
        ("default", "contents read, pullRequests write, checks read through the GitHub tools"),
        ("read", "contents read, pullRequests read, checks read through the GitHub tools"),
        ("none", "no GitHub tool"),
    ],
)
def test_each_agent_says_what_unmounted_repositories_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, got: str
) -> None:
    monkeypatch.setenv("HOOKSPAWN_UNMOUNTED_CAPABILITIES", setting)
    done = check(".auto", cwd=_tree(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    ours = [line for line in lines if line.startswith(HEAD)]
    # a, plain, trusted: in that order
    assert ours[0].startswith(f"{HEAD}{setting}): {got}")
    assert ours[1] == f"{HEAD}{setting}): no GitHub tool (no githubApp mount)"
    assert ours[2].startswith(f"{HEAD}{setting}): {got}")
    warned = [line for line in lines if "HOOKSPAWN_UNMOUNTED_CAPABILITIES=default lets" in line]
    if setting == "default":
        # only the trigger a fork's pull request can fire, of the agent that does not limit who
        assert warned == [
            ".auto/agents/a.yaml:16: warning: triggers.1: a pull request from a fork can start "
            "a ('pull_request'), and HOOKSPAWN_UNMOUNTED_CAPABILITIES=default lets its "
            "sessions write (pullRequests: write) on every repository its installations cover "
            "that no mount names: set it to read or none, or filter the trigger on the author "
            "association"
        ]
    else:
        assert warned == []
        assert "lets its sessions write" not in done.stdout


def test_strict_fails_on_the_warning_and_json_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    strict = check("--strict", ".auto", cwd=tmp_path)
    assert strict.returncode == 1
    assert "lets its sessions write (pullRequests: write)" in strict.stdout
    monkeypatch.setenv("HOOKSPAWN_UNMOUNTED_CAPABILITIES", "read")
    assert "lets its sessions write" not in check("--strict", ".auto", cwd=tmp_path).stdout

    done = check("--json", ".auto", cwd=tmp_path)
    body = json.loads(done.stdout)
    assert body["unmounted"] == {
        "setting": "read",
        "agents": {
            "a": {
                "capabilities": {"contents": "read", "pullRequests": "read", "checks": "read"},
                "forkTriggers": [body["agents"][0]["triggers"][1]["key"]],
            },
            "plain": {"capabilities": {}, "forkTriggers": []},
            "trusted": {
                "capabilities": {"contents": "read", "pullRequests": "read", "checks": "read"},
                "forkTriggers": [],
            },
        },
    }


def test_an_unknown_setting_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKSPAWN_UNMOUNTED_CAPABILITIES", "all")
    done = check(".auto", cwd=_tree(tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "HOOKSPAWN_UNMOUNTED_CAPABILITIES" in done.stderr
    assert "'default', 'read' or 'none'" in done.stderr
