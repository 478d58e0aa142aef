"""The harness the agent names, started by the real runner under srt: a stand-in program first
on the session's PATH as `claude` or `codex` (tests/workers/session/runner/fake_harness.py)
checks how it was started and prints a recorded event stream of the real one. The real CLIs
are tested end to end elsewhere; this proves the wiring: argv, environment, the model endpoint
reached by the harness alone, the log, the transcript, the record, failures, and no key where
it must not be."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.secret_scan import file_haystacks, leaks, redis_haystacks
from tests.workers.session.runner.conftest import (
    HOOKSPAWN,
    Origin,
    hookspawn_web,
    runner_settings,
    running_runner,
    sandbox_file,
    settings_env,
)
from workers.session.runner.logs import log_path, transcript_path

SAMPLES = Path(__file__).parents[3] / "triggers" / "session" / "harness_samples"
ANTHROPIC_KEY = "sk-ant-test-7f3a9c1e5b"
OPENAI_KEY = "sk-openai-test-2d8e4f6a"
SYSTEM_PROMPT = "You review pull requests for acme."


class _Endpoint(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def model_endpoint() -> Iterator[str]:
    """A model endpoint stand-in on loopback answering 200 to any GET: what the harness may
    reach and setup may not."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def fake_programs(shared_dir: Path) -> Path:
    """`claude` and `codex` stand-ins with the recorded streams they print, in a directory the
    session's account can read (mounted read-only into the sandbox)."""
    directory = shared_dir / "fake-bin"
    directory.mkdir()
    script = Path(__file__).with_name("fake_harness.py")
    for name in ("claude", "codex"):
        shutil.copy(script, directory / name)
        (directory / name).chmod(0o755)
    shutil.copy(SAMPLES / "claude-success.jsonl", directory / "claude.jsonl")
    shutil.copy(SAMPLES / "codex-success.jsonl", directory / "codex.jsonl")
    shutil.copy(SAMPLES / "claude-refused-key-retries.jsonl", directory / "claude-refused.jsonl")
    for path in directory.iterdir():
        path.chmod(0o755)
    return directory


def write_harness_agent(
    agents_dir: Path,
    name: str,
    *,
    harness: str,
    path: str,
    mode: str = "success",
    approval: str = "bypass",
    setup: list[dict[str, Any]] | None = None,
) -> None:
    text = f"""\
name: {name}
harness: {harness}
systemPrompt: {json.dumps(SYSTEM_PROMPT)}
environment:
  name: {name}-env
  image: {{kind: preset, name: node24}}
  approval: {approval}
  setup: {json.dumps(setup or [])}
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
    auth: {{kind: none}}
workingDirectory: /workspace/widgets
env:
  PATH: {json.dumps(path)}
  FAKE_HARNESS_MODE: {mode}
"""
    target = agents_dir / "agents" / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def _seen(session: dict[str, Any]) -> dict[str, Any]:
    home = Path(session["workspace"]) / "home" / "user"
    seen: dict[str, Any] = json.loads((home / "harness-seen.json").read_text())
    return seen


def _root_files(session: dict[str, Any]) -> list[Path]:
    root = Path(session["workspace"])
    beside = [root.with_name(root.name + suffix) for suffix in (".srt.json", ".gitconfig")]
    inside = [Path(d) / f for d, _, files in os.walk(root) for f in files]
    return inside + beside


def test_the_named_harness_runs_in_the_sandbox_with_its_key_alone(
    redis_url: str, shared_dir: Path, origin: Origin
) -> None:
    fakes = fake_programs(shared_dir)
    path = f"{fakes}:/usr/local/bin:/usr/bin:/bin"
    with model_endpoint() as endpoint:
        settings = runner_settings(
            redis_url,
            shared_dir,
            origin,
            sandbox_config=sandbox_file(
                shared_dir,
                mounts=[{"source": str(fakes), "target": str(fakes), "mode": "readonly"}],
            ),
            anthropic_api_key=ANTHROPIC_KEY,
            anthropic_base_url=endpoint,
            openai_api_key=OPENAI_KEY,
            openai_base_url=f"{endpoint}/v1",
            codex_model="gpt-test",
            harness_without_key="fail",
        )
        probe = (
            f"python3 {fakes}/claude --reach {endpoint} > $HOME/setup-reach; env > $HOME/setup-env"
        )
        agents = settings.agents_dir
        write_harness_agent(
            agents,
            "reviewer",
            harness="claude-code",
            path=path,
            setup=[{"name": "probe", "commands": [probe]}],
        )
        write_harness_agent(agents, "coder", harness="codex", path=path, approval="prompt")
        write_harness_agent(agents, "refused", harness="claude-code", path=path, mode="refused")
        write_harness_agent(agents, "broken", harness="claude-code", path=path, mode="broken")
        write_harness_agent(agents, "missing", harness="claude-code", path="/usr/sbin")
        with hookspawn_web(settings) as hs, running_runner(settings, concurrency=2):
            ids = {
                "reviewer": hs.start("reviewer", initialPrompt="Review it.", message="Be brief."),
                "coder": hs.start("coder", initialPrompt="Fix it."),
                "refused": hs.start("refused", initialPrompt="Try."),
                "broken": hs.start("broken", initialPrompt="Try."),
                "missing": hs.start("missing", initialPrompt="Try."),
            }
            ended = {
                name: hs.wait_status(sid, "succeeded", "failed", "cancelled", timeout=90)
                for name, sid in ids.items()
            }
            transcript = hs.http.get(f"/sessions/{ids['reviewer']}/transcript")
            url, env = str(hs.http.base_url), settings_env(settings)

            def cli(action: str, *flags: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [str(HOOKSPAWN), "sessions", action, ids["reviewer"], *flags, "--url", url],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )

            timeline, raw, shown = cli("transcript"), cli("transcript", "--raw"), cli("show")
            page = hs.http.get(f"/ui/sessions/{ids['reviewer']}").text
            no_transcript = hs.http.get(f"/sessions/{ids['missing']}/transcript")
            listed = hs.http.get("/sessions").text
            secrets = {"anthropic key": ANTHROPIC_KEY, "openai key": OPENAI_KEY}
            stored, _ = leaks(secrets, redis_haystacks(hs.rt.client))

    reviewer = ended["reviewer"]
    assert reviewer["status"] == "succeeded", reviewer
    assert reviewer["harnessRun"] == {"name": "claude-code", "version": "2.1.332"}
    assert reviewer["harness"] == reviewer["harnessRun"]
    assert reviewer["result"] == "All done: read and ran."
    assert reviewer["usage"] == {
        "inputTokens": 70371,
        "outputTokens": 35,
        "turns": 3,
        "costUsd": 0.282184,
    }
    seen = _seen(reviewer)
    argv = seen["argv"]
    assert argv[:3] == ["-p", "--output-format", "stream-json"]
    assert "--dangerously-skip-permissions" in argv and "--strict-mcp-config" in argv
    assert argv[argv.index("--append-system-prompt") + 1] == SYSTEM_PROMPT
    assert seen["prompt"] == "Review it.\n\nBe brief."
    assert seen["baseUrl"] == endpoint
    assert seen["reach"] == "200"  # the model endpoint, through srt's proxy
    assert seen["cwd"].endswith("/workspace/widgets")
    assert "CLAUDE_CONFIG_DIR" in seen["variables"]
    if os.geteuid() == 0:
        assert seen["user"] != 0  # as the runner user
    home = Path(reviewer["workspace"]) / "home" / "user"
    assert (home / "setup-reach").read_text().strip() != "200"  # setup may not reach it
    setup_env = (home / "setup-env").read_text()
    assert "ANTHROPIC" not in setup_env and ANTHROPIC_KEY not in setup_env

    log = log_path(settings.data_dir, ids["reviewer"]).read_text()
    assert "tool: mcp__github__get_file_contents owner=acme repo=widgets path=src/app.py" in log
    assert "tool: Bash echo hi-from-bash; id -un" in log
    assert "answer: All done: read and ran." in log
    assert "[redacted]" in log  # the key the stand-in printed on stderr

    assert transcript.status_code == 200, transcript.text
    assert transcript.headers["x-harness"] == "claude-code"
    events = [json.loads(line) for line in transcript.text.splitlines()]
    assert events[0]["message"]["content"][0]["content"] == "ANTHROPIC_API_KEY=[redacted]"
    assert [e["type"] for e in events[1:]] == [
        json.loads(line)["type"]
        for line in (SAMPLES / "claude-success.jsonl").read_text().splitlines()
    ]
    assert timeline.returncode == 0, timeline.stderr
    assert "tool       mcp__github__get_file_contents\n" in timeline.stdout
    assert "answer     All done: read and ran.\n" in timeline.stdout
    assert raw.returncode == 0 and raw.stdout == transcript.text
    assert shown.returncode == 0, shown.stderr
    assert "harness: claude-code 2.1.332\n" in shown.stdout
    assert "usage: 70371 tokens in, 35 out, 3 turn(s), $0.2822\n" in shown.stdout
    assert "result:\n  All done: read and ran.\n" in shown.stdout
    assert 'id="transcript"' in page and "echo hi-from-bash; id -un" in page
    assert 'id="result"' in page and ANTHROPIC_KEY not in page
    assert no_transcript.status_code == 404
    assert no_transcript.json()["error"]["code"] == "no_transcript"

    coder = ended["coder"]
    assert coder["status"] == "succeeded", coder
    assert coder["harnessRun"]["name"] == "codex"
    assert coder["result"] == "Codex done."
    assert coder["usage"] == {"inputTokens": 43451, "outputTokens": 25, "turns": 1}
    seen = _seen(coder)
    # approval prompt: no bypass flag (codex exec then refuses what the model would escalate)
    assert seen["argv"] == ["exec", "--json", "--skip-git-repo-check", "-"]
    assert seen["prompt"] == "Fix it."
    assert seen["reach"] == "200"
    assert 'approval_policy = "on-request"' in seen["codexConfig"]
    assert 'model = "gpt-test"' in seen["codexConfig"]
    assert "OPENAI_API_KEY" in seen["variables"] and "ANTHROPIC_API_KEY" not in seen["variables"]
    codex_log = log_path(settings.data_dir, ids["coder"]).read_text()
    assert "tool: shell /usr/bin/bash -lc 'echo hi-from-codex; id -un'" in codex_log
    assert "approval prompt: codex exec has no one to ask" in codex_log

    refused = ended["refused"]
    assert (refused["status"], refused["failure"]["code"]) == ("failed", "harness_failed")
    assert "refused the key" in refused["failure"]["message"]
    assert "HOOKSPAWN_ANTHROPIC_API_KEY" in refused["failure"]["message"]
    broken = ended["broken"]
    assert (broken["status"], broken["failure"]["code"]) == ("failed", "harness_failed")
    assert "Something broke" in broken["failure"]["message"]
    missing = ended["missing"]
    assert (missing["status"], missing["failure"]["code"]) == ("failed", "harness_unavailable")
    assert "'claude'" in missing["failure"]["message"]
    assert "scripts/setup" in missing["failure"]["message"]

    for name, sid in ids.items():
        session = ended[name]
        assert ANTHROPIC_KEY not in json.dumps(session) and OPENAI_KEY not in json.dumps(session)
        places = [*_root_files(session), log_path(settings.data_dir, sid)]
        places.append(transcript_path(settings.data_dir, sid))
        found, scanned = leaks(secrets, file_haystacks(places))
        assert found == [], name
        assert scanned > 0
        # the harness's configuration is gone with the run
        assert not (Path(session["workspace"]) / ".hookspawn" / "harness").exists()
    assert stored == []
    assert ANTHROPIC_KEY not in listed


def test_without_a_key_a_session_fails_naming_the_setting_or_is_skipped_when_asked(
    redis_url: str, shared_dir: Path, origin: Origin, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="workers.session.runner.service")
    settings = runner_settings(redis_url, shared_dir, origin, harness_without_key="fail")
    write_harness_agent(settings.agents_dir, "keyless", harness="codex", path="/usr/bin:/bin")
    with hookspawn_web(settings) as hs, running_runner(settings):
        failed = hs.wait_status(hs.start("keyless", initialPrompt="Go."), "succeeded", "failed")
    # the runner said at start which harnesses it can run, and why not
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("harness ")]
    assert len(said) == 2, said
    assert said[1].startswith("harness codex: cannot run (")
    assert "HOOKSPAWN_OPENAI_API_KEY is unset" in said[1]
    assert said[1].endswith("its sessions fail harness_unavailable")
    assert (failed["status"], failed["failure"]["code"]) == ("failed", "harness_unavailable")
    assert "HOOKSPAWN_OPENAI_API_KEY" in failed["failure"]["message"]

    skipping = runner_settings(redis_url, shared_dir, origin, data_dir=shared_dir / "data2")
    with hookspawn_web(skipping) as hs, running_runner(skipping):
        sid = hs.start("keyless", initialPrompt="Go.")
        done = hs.wait_status(sid, "succeeded", "failed")
        listed = hs.http.get("/sessions").json()["items"]
    assert done["status"] == "succeeded", done
    assert done["harnessRun"]["skipped"].startswith("HOOKSPAWN_OPENAI_API_KEY is unset")
    assert done["result"] is None and done["usage"] is None
    assert [s["harnessRun"] for s in listed if s["id"] == sid] == [done["harnessRun"]]
    log = log_path(skipping.data_dir, sid).read_text()
    assert "harness codex skipped: HOOKSPAWN_OPENAI_API_KEY is unset" in log
