"""The GitHub App manifest computed from the agents, and the commands that print it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents import compile_dir
from agents.app_manifest import app_manifest
from hookspawn.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / ".auto"


def write_agent(root: Path, name: str, text: str) -> Path:
    (root / "agents").mkdir(parents=True, exist_ok=True)
    (root / "agents" / f"{name}.yaml").write_text(text)
    return root


AGENT = """\
name: {name}
harness: claude-code
environment:
  name: env-{name}
  image: {{kind: preset, name: node24}}
mounts:
  - name: repo
    kind: git
    repository: me/mine
    mountPath: /workspace/mine
    ref: main
    auth:
      kind: githubApp
      capabilities: {capabilities}
triggers:
{triggers}
"""


def test_the_examples_ask_exactly_what_their_agents_need() -> None:
    result = compile_dir(EXAMPLES)
    assert result.ok
    made = app_manifest(result.agents, public_url="https://hooks.example/", name="acme-agents")
    assert made.manifest == {
        "name": "acme-agents",
        "url": "https://hooks.example/",
        "hook_attributes": {"url": "https://hooks.example/webhooks/github", "active": True},
        "redirect_url": "https://hooks.example/github-app/callback",
        "public": False,
        # the widgets mount leaves checks and actions out: their defaults (read) count
        "default_permissions": {
            "actions": "read",
            "checks": "read",
            "contents": "write",
            "issues": "write",
            "metadata": "read",
            "pull_requests": "write",
        },
        # repository: connections follow renames, transfers and deletions, whatever the triggers
        "default_events": ["issue_comment", "pull_request", "push", "repository"],
    }
    assert "event push: triggers of nightly-deps" in made.reasons
    assert (
        "event repository: connections follow its repositories' renames, transfers and deletions"
        in made.reasons
    )


def test_highest_level_wins_and_an_unbacked_event_adds_its_permission(tmp_path: Path) -> None:
    none = "{contents: read, pullRequests: none, issues: none, checks: none, actions: none}"
    write_agent(
        tmp_path,
        "reader",
        AGENT.format(
            name="reader",
            capabilities=none,
            triggers="  - {kind: github, event: issues}\n"
            "  - {kind: github, event: installation}\n"
            "  - {kind: github, event: installation_repositories}",
        ),
    )
    write_agent(
        tmp_path,
        "writer",
        AGENT.format(
            name="writer",
            capabilities="{contents: write, pullRequests: none, issues: none}",
            triggers="  - {kind: github, event: push}",
        ),
    )
    result = compile_dir(tmp_path)
    assert result.ok, result.errors
    made = app_manifest(result.agents, public_url="http://127.0.0.1:8000", name="x")
    # contents at the writer's level; issues asked at read only because the issues event
    # needs it; installation events are never listed (GitHub sends them unasked)
    assert made.permissions == {
        "actions": "read",
        "checks": "read",
        "contents": "write",
        "issues": "read",
        "metadata": "read",
    }
    assert made.events == ["issues", "push", "repository"]
    # GitHub refuses a webhook it cannot reach: on loopback the App's webhook is inactive
    assert made.manifest["hook_attributes"] == {
        "url": "http://127.0.0.1:8000/webhooks/github",
        "active": False,
    }
    assert any(
        r.startswith("permission issues: read so that GitHub sends issues") for r in made.reasons
    )


def test_manifest_command_prints_the_json_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOOKSPAWN_DATA_DIR", str(tmp_path / "data"))
    code = main(
        ["github-app", "manifest", str(EXAMPLES), "--url", "https://hooks.example", "--name", "a"]
    )
    out, err = capsys.readouterr()
    assert code == 0
    manifest = json.loads(out)
    assert manifest["hook_attributes"]["url"] == "https://hooks.example/webhooks/github"
    assert manifest["name"] == "a"
    assert manifest["public"] is False
    assert "permission contents: write for fix-command" in err


def test_manifest_command_refuses_agents_that_do_not_compile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_agent(tmp_path, "bad", "name: bad\nharness: nope\n")
    assert main(["github-app", "manifest", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "do not compile" in err and "hookspawn check" in err


def test_forward_command_names_the_events_the_url_and_the_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOOKSPAWN_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("HOOKSPAWN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("HOOKSPAWN_PUBLIC_URL", raising=False)
    monkeypatch.delenv("HOOKSPAWN_URL", raising=False)
    assert main(["github-app", "forward-command", str(EXAMPLES)]) == 0
    out, _ = capsys.readouterr()
    assert out == (
        "gh webhook forward --repo=acme/widgets "
        "--events=issue_comment,pull_request,push,repository "
        "--url=http://127.0.0.1:8000/webhooks/github --secret=s3cret\n"
    )
    assert main(["github-app", "forward-command", str(EXAMPLES), "--repository", "me/mine"]) == 0
    assert "--repo=me/mine " in capsys.readouterr().out


def test_create_prints_the_servers_registration_page(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOOKSPAWN_DATA_DIR", str(tmp_path / "data"))
    code = main(
        ["github-app", "create", str(EXAMPLES), "--url", "http://127.0.0.1:9999", "--org", "acme"]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert out == "http://127.0.0.1:9999/github-app/new?org=acme\n"


def test_the_serve_banner_prints_the_forward_command(tmp_path: Path) -> None:
    from hookspawn.serve.forward_notice import forward_lines
    from workers.settings import Settings

    settings = Settings.model_validate({"agents_dir": EXAMPLES, "data_dir": tmp_path})
    lines = forward_lines(settings, ["s1", "s0"], "http://127.0.0.1:8000", demo=False)
    assert lines[0] == (
        "forward GitHub's webhooks here: gh webhook forward --repo=acme/widgets "
        "--events=issue_comment,pull_request,push,repository "
        "--url=http://127.0.0.1:8000/webhooks/github "
        "--secret=s1"
    )
    assert "`hookspawn github-app create`" in lines[1]
    assert len(forward_lines(settings, ["s"], "x", demo=True)) == 1
    assert forward_lines(settings, [], "x", demo=True) == []  # no secret: no command to give


def test_the_coverage_events_are_the_lifecycle_events_github_does_not_send_unasked() -> None:
    from agents.app_manifest import COVERAGE_EVENTS, IMPLICIT_EVENTS
    from workers.github.lifecycle import LIFECYCLE_EVENTS

    unasked = {e for e in LIFECYCLE_EVENTS if e.startswith("installation")}
    assert unasked >= IMPLICIT_EVENTS
    assert LIFECYCLE_EVENTS - unasked == COVERAGE_EVENTS


def test_an_agent_without_triggers_still_subscribes_to_repository(tmp_path: Path) -> None:
    write_agent(
        tmp_path,
        "quiet",
        AGENT.format(name="quiet", capabilities="{contents: read}", triggers="  []"),
    )
    result = compile_dir(tmp_path)
    assert result.ok, result.errors
    made = app_manifest(result.agents, public_url="https://hooks.example", name="x")
    assert made.events == ["repository"]
    assert made.permissions["metadata"] == "read"  # what GitHub needs to send it
