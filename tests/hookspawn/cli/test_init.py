"""`hookspawn init [DIR]`: a starter .auto that passes `check --strict`, never overwriting."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents import compile_dir
from hookspawn import cli
from hookspawn.cli.starter import STARTER_FILES
from hookspawn.serve.samples import path_of
from triggers.envelope import build_envelope
from triggers.matching import TriggerIndex

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)


def test_init_writes_a_starter_that_passes_strict_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["init"]) == 0
    out = capsys.readouterr().out
    assert "wrote .auto/agents/pr-review.yaml" in out
    assert "hookspawn check --strict .auto" in out
    assert sorted(
        p.relative_to(tmp_path / ".auto").as_posix() for p in (tmp_path / ".auto").rglob("*.yaml")
    ) == sorted(STARTER_FILES)
    assert cli.main(["check", "--strict", ".auto"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ok: 2 agents compiled"


def test_the_starter_agents(tmp_path: Path) -> None:
    assert cli.main(["init", "project/.auto", "--repository", "acme/widgets"]) == 0
    result = compile_dir(tmp_path / "project/.auto")
    assert result.ok and result.warnings == ()
    agents = {agent.name: agent for agent in result.agents}
    review = agents["pr-review"]
    (mount,) = review.mounts
    assert mount.repository == "acme/widgets"
    assert mount.auth.capabilities.contents == "read"
    assert review.triggers[0].event == "pull_request"
    command = agents["comment-command"]
    (trigger,) = command.triggers
    assert trigger.event == "issue_comment"
    by_path = {f.path: f for f in trigger.filters}
    association = by_path["github.comment.authorAssociation"]
    assert association.op == "in"
    assert set(association.value) == {
        "OWNER",
        "MEMBER",
        "COLLABORATOR",
    }


@pytest.mark.parametrize(
    ("association", "body", "fires"),
    [
        ("OWNER", "/agent fix the typo", True),
        ("MEMBER", "/agent fix the typo", True),
        ("COLLABORATOR", "/agent fix the typo", True),
        ("CONTRIBUTOR", "/agent fix the typo", False),
        ("NONE", "/agent fix the typo", False),
        ("OWNER", "thanks!", False),
    ],
)
def test_the_comment_command_answers_only_people_of_the_repository(
    tmp_path: Path, association: str, body: str, fires: bool
) -> None:
    assert cli.main(["init", "--repository", "acme/widgets"]) == 0
    index = TriggerIndex(compile_dir(tmp_path / ".auto").agents)
    payload = json.loads(path_of("issue_comment.created").read_text())
    payload["comment"]["author_association"] = association
    payload["comment"]["body"] = body
    matched = index.match(build_envelope("issue_comment", "d1", payload))
    assert [c.agent.name for c in matched] == (["comment-command"] if fires else [])


def test_init_refuses_to_overwrite_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / ".auto" / "agents" / "pr-review.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("name: mine\n")
    assert cli.main(["init"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "hookspawn init: .auto/agents/pr-review.yaml already exists; init writes only new files\n"
    )
    assert mine.read_text() == "name: mine\n"
    assert not (tmp_path / ".auto" / "fragments").exists()
    assert not (tmp_path / ".auto" / "agents" / "comment-command.yaml").exists()


def test_init_into_an_unwritable_place_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    assert cli.main(["init", "file/.auto"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("hookspawn init: cannot write in file/.auto: ")
