"""The parts of the demo path: shipped example agents and sample payloads, the demo's settings
and environment, the demo connection, and the start-up line about agents."""

from __future__ import annotations

import json
import logging
import tomllib
from pathlib import Path

import pytest
import redis

from agents import compile_dir
from hookspawn.serve import demo, samples, session_sandbox
from hookspawn.serve.agents_notice import agents_notice
from triggers.envelope import build_envelope
from triggers.matching import TriggerIndex
from workers.github.client import GitHubApp
from workers.github.connections import ConnectionStore
from workers.github.installation import Installation
from workers.session.runner.sandbox import SandboxUnavailable, host_paths_for, open_sandbox
from workers.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


def test_the_example_agents_ship_in_the_package() -> None:
    assert demo.AGENTS_DIR.is_dir()
    # in a checkout the package's copy is examples/.auto itself, so the two cannot drift
    assert (ROOT / "examples" / ".auto").resolve() == demo.AGENTS_DIR
    result = compile_dir(demo.AGENTS_DIR, secret_names=())
    assert result.ok
    assert sorted(a.name for a in result.agents) == ["fix-command", "nightly-deps", "pr-review"]


def test_samples_are_listed_with_their_licence() -> None:
    assert samples.names() == ["issue_comment.created", "pull_request.opened", "push.main"]
    assert (samples.PAYLOADS_DIR / "LICENSE").read_text().startswith("The MIT License")
    assert "octokit/webhooks" in (samples.PAYLOADS_DIR / "README.md").read_text()
    assert samples.event_of("pull_request.opened") == "pull_request"
    assert samples.event_of("push.main") == "push"


def test_each_sample_fires_an_example_agent_on_the_demo_repository() -> None:
    index = TriggerIndex(compile_dir(demo.AGENTS_DIR).agents)
    fired = {}
    for name in samples.names():
        body = json.loads(samples.path_of(name).read_text())
        assert body["repository"]["full_name"] == demo.REPOSITORY
        assert body["repository"]["id"] == demo.REPOSITORY_ID
        assert body["installation"]["id"] == demo.INSTALLATION_ID
        assert body["sender"]["type"] == "User"
        envelope = build_envelope(samples.event_of(name), f"d-{name}", body)
        fired[name] = [c.agent.name for c in index.match(envelope)]
    assert fired == {
        "issue_comment.created": ["fix-command"],
        "pull_request.opened": ["pr-review"],
        "push.main": ["nightly-deps"],
    }
    comment = json.loads(samples.path_of("issue_comment.created").read_text())["comment"]
    assert comment["author_association"] == "OWNER"


def test_demo_settings_run_on_the_embedded_default(tmp_path: Path) -> None:
    given = Settings(
        redis_url="redis://elsewhere:6379/0",
        dispatch_url="http://dispatch.example",
        github_app_id="1",
        github_private_key_path=tmp_path / "key.pem",
        webhook_secret=["kept"],
        data_dir=tmp_path,
    )
    settings = demo.demo_settings(given)
    assert settings.agents_dir == demo.AGENTS_DIR
    assert settings.redis_url is None and settings.dispatch_url is None
    assert settings.github_app_id is None and settings.github_private_key_path is None
    assert GitHubApp.from_settings(settings) is None
    assert settings.webhook_secret == ["kept"] and settings.data_dir == tmp_path
    env = demo.demo_environment(
        {
            "PATH": "/bin",
            "HOOKSPAWN_REDIS_URL": "redis://elsewhere",
            "HOOKSPAWN_DISPATCH_URL": "http://dispatch.example",
            "HOOKSPAWN_GITHUB_APP_ID": "1",
            "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH": "/k.pem",
            "HOOKSPAWN_AGENTS_DIR": "mine",
            "HOOKSPAWN_WEBHOOK_SECRET": "kept",
        }
    )
    assert env == {
        "PATH": "/bin",
        "HOOKSPAWN_AGENTS_DIR": str(demo.AGENTS_DIR),
        "HOOKSPAWN_WEBHOOK_SECRET": "kept",
        "HOOKSPAWN_RUNNER": "local",
        "HOOKSPAWN_HARNESS_WITHOUT_KEY": "skip",
        # set empty: the App `github-app create` kept in the data directory is not used either
        "HOOKSPAWN_GITHUB_APP_ID": "",
    }


def test_the_demo_connection_covers_the_examples_repository(
    redis_url: str, redis_client: redis.Redis
) -> None:
    demo.record_connection(redis_url)
    demo.record_connection(redis_url)  # every start records it again: still one
    store = ConnectionStore(redis_client)
    (installation,) = store.all()
    assert installation.id == demo.INSTALLATION_ID and installation.active
    covered = store.resolve("ACME/Widgets", pinned=None, delivery_installation=demo.INSTALLATION_ID)
    assert covered is not None
    assert covered[0].id == demo.INSTALLATION_ID and covered[1] == demo.REPOSITORY_ID
    assert installation.demo and installation.to_json()["demo"] is True  # labelled
    # a serve without --demo removes it: labelled, or as an older demo left it unlabelled
    assert demo.remove_connection(redis_url) and store.all() == []
    assert not demo.remove_connection(redis_url)
    installation.demo = False
    store.replace_installation(demo.INSTALLATION_ID, installation)
    assert demo.remove_connection(redis_url) and store.all() == []
    # an installation that only shares the id is kept
    store.replace_installation(
        demo.INSTALLATION_ID, Installation(id=demo.INSTALLATION_ID, account="someone")
    )
    assert not demo.remove_connection(redis_url)
    assert [i.account for i in store.all()] == ["someone"]
    notes = demo.demo_notes("http://127.0.0.1:9999", {"PATH": "/bin"})
    assert notes == [
        "demo: connection acme (installation 424242) covers acme/widgets",
        "demo: in a second shell: hookspawn send --example pull_request.opened "
        "--url http://127.0.0.1:9999",
        "demo: then open http://127.0.0.1:9999/ui",
    ]
    notes = demo.demo_notes(
        "http://127.0.0.1:8000",
        {"HOOKSPAWN_REDIS_URL": "redis://elsewhere", "HOOKSPAWN_GITHUB_APP_ID": "1"},
    )
    assert notes[0] == (
        "demo: ignoring HOOKSPAWN_REDIS_URL, HOOKSPAWN_GITHUB_APP_ID "
        "(the demo runs on the embedded default)"
    )
    assert notes[2].endswith("hookspawn send --example pull_request.opened")


def test_the_start_line_names_the_agents_and_their_directory(tmp_path: Path) -> None:
    level, line = agents_notice(demo.AGENTS_DIR)
    assert level == logging.INFO
    assert line == (f"loaded 3 agents from {demo.AGENTS_DIR}: fix-command, nightly-deps, pr-review")
    one = tmp_path / "one" / ".auto"
    (one / "agents").mkdir(parents=True)
    (one / "agents" / "a.yaml").write_text(
        "name: a\nharness: codex\nenvironment: {name: e, image: {kind: preset, name: node24}}\n"
    )
    assert agents_notice(one)[1] == f"loaded 1 agent from {one}: a"


def test_with_no_agents_the_start_line_says_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / ".auto"
    level, line = agents_notice(missing)
    assert level == logging.WARNING
    assert line.startswith(f"no agents loaded ({missing}: no such directory (expected the .auto")
    assert "every delivery will fire nothing" in line
    assert f"`hookspawn init {missing}`" in line
    assert "HOOKSPAWN_AGENTS_DIR" in line and "`hookspawn serve --demo`" in line
    (missing / "agents").mkdir(parents=True)
    (missing / "agents" / "a.yaml").write_text("name: a\n")
    level, line = agents_notice(missing)
    assert level == logging.ERROR
    assert line.startswith(f"no agents loaded: the agent files in {missing} do not compile (")
    assert f"`hookspawn check {missing}` lists them all" in line
    # beside a file that compiles, the bad one is left out and the good one loaded
    (missing / "agents" / "b.yaml").write_text(
        "name: b\nharness: codex\nenvironment: {name: e, image: {kind: preset, name: node24}}\n"
    )
    level, line = agents_notice(missing)
    assert level == logging.ERROR
    assert line.startswith(f"loaded 1 agent from {missing}: b; files that do not compile are left")
    assert "a.yaml" in line and f"`hookspawn check {missing}` lists them all" in line


def test_the_package_data_patterns_ship_the_examples_and_samples() -> None:
    # what a wheel (not an editable install) carries: pyproject's package-data for `hookspawn`
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["hookspawn"]
    package = ROOT / "hookspawn"
    shipped = {
        path.relative_to(package).as_posix()
        for pattern in patterns
        for path in package.glob(pattern)
        if path.is_file()
    }
    agents = {
        f"examples/auto/{p.relative_to(demo.AGENTS_DIR).as_posix()}"
        for p in demo.AGENTS_DIR.rglob("*.yaml")
    }
    assert agents and agents <= shipped
    payloads = {f"examples/payloads/{name}.json" for name in samples.names()}
    assert payloads | {"examples/payloads/LICENSE", "examples/payloads/README.md"} <= shipped


def test_the_demo_sandbox_is_srt_without_mounts_where_srt_works(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    path, note = session_sandbox.demo_sandbox(data_dir)
    assert path == (data_dir / "demo-sandbox.json").absolute()
    assert json.loads(path.read_text()) == {"sandbox": {"backend": "srt", "mounts": [], "env": {}}}
    assert note == f"demo: sessions run confined by srt (sandbox config {path})"
    config = open_sandbox(path, host=host_paths_for(data_dir))
    assert (config.backend, config.mounts) == ("srt", ())


def test_without_srt_the_demo_runs_unconfined_and_serves_sessions_fail_naming_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bare"))  # a machine without srt
    data_dir = tmp_path / "data"
    path, note = session_sandbox.demo_sandbox(data_dir)
    assert json.loads(path.read_text())["sandbox"]["backend"] == "none"
    assert note.startswith("demo: WARNING: srt cannot start here (srt is not installed")
    assert note.endswith(f"sessions run UNCONFINED (sandbox backend none, {path})")

    # serve's own configuration stays srt: its sessions fail rather than run unconfined
    path = session_sandbox.serve_sandbox(data_dir)
    assert path == (data_dir / "sandbox.json").absolute()
    assert json.loads(path.read_text()) == {"sandbox": {"backend": "srt", "mounts": [], "env": {}}}
    note = session_sandbox.serve_sandbox_note(path, session_sandbox.srt_problem(None))
    assert note.startswith("WARNING: srt cannot start here (srt is not installed (")
    assert "scripts/setup installs them" in note
    assert "every session fails sandbox_unavailable" in note
    assert note.endswith(
        'set HOOKSPAWN_SANDBOX_CONFIG to a file holding {"sandbox": {"backend": "none"}}'
    )
    with pytest.raises(SandboxUnavailable) as refused:
        open_sandbox(path, host=host_paths_for(data_dir))
    assert refused.value.code == "sandbox_unavailable"
    assert "scripts/setup installs them" in refused.value.refusal()
