"""compose.yaml, the Dockerfile and .dockerignore: real subcommands, one image, a durable Redis."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from hookspawn.cli import _parser
from tests.conftest import wait_for
from tests.procs import environment, launch
from workers.celery_app import PROCESS_DELIVERY, make_celery
from workers.settings import split_csv

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def test_every_hookspawn_command_is_a_real_subcommand(compose: dict[str, Any]) -> None:
    commands = [s["command"] for s in compose["services"].values() if "command" in s]
    hookspawn = [c for c in commands if c[0] == "hookspawn"]
    assert {c[1] for c in hookspawn} == {"web", "worker"}
    for command in hookspawn:
        args = _parser().parse_args(command[1:])  # exits (fails the test) on a bad command line
        assert args.command == command[1]
    assert ["hookspawn", "check"] not in commands


def test_redis_is_durable(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    assert redis["image"].startswith("redis:7")
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    assert "--maxmemory-policy noeviction" in command
    assert any(v.endswith(":/data") for v in redis["volumes"])
    assert "healthcheck" in redis


def test_services_and_replicas(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["flower"]["profiles"] == ["flower"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["HOOKSPAWN_REDIS_URL"].startswith("redis://redis:6379")
        assert "healthcheck" in services[name]


def test_web_and_worker_share_one_image(compose: dict[str, Any]) -> None:
    web, worker = compose["services"]["web"], compose["services"]["worker"]
    assert web["build"] == "."
    assert "build" not in worker  # built once, by web
    assert web["image"] == worker["image"] == "hookspawn:local"
    assert worker["pull_policy"] == "never"


def test_dependencies_are_installed_before_the_source_is_copied() -> None:
    steps = [
        line.strip()
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    first_source = min(
        i for i, s in enumerate(steps) if s.startswith("COPY ") and "workers" in s.split()
    )
    dependencies = next(i for i, s in enumerate(steps) if "-r /tmp/requirements.txt" in s)
    assert "COPY pyproject.toml ./" in steps[:dependencies]
    assert dependencies < first_source
    assert not any(s.startswith("COPY . ") for s in steps)
    package = next(i for i, s in enumerate(steps) if "pip install --no-cache-dir --no-deps ." in s)
    assert package > first_source


def test_dockerignore_keeps_environments_data_and_keys_out() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".hookspawn", "*.pem", ".env", "tests"} <= ignored


def test_the_private_key_reaches_the_containers_as_a_secret(compose: dict[str, Any]) -> None:
    (name,) = compose["secrets"]
    assert compose["secrets"][name]["file"].startswith("${HOOKSPAWN_GITHUB_PRIVATE_KEY_FILE")
    for service in ("web", "worker"):
        spec = compose["services"][service]
        assert spec["secrets"] == [name]
        assert spec["environment"]["HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH"] == f"/run/secrets/{name}"


def test_the_admin_token_is_required(compose: dict[str, Any]) -> None:
    for service in ("web", "worker"):
        token = compose["services"][service]["environment"]["HOOKSPAWN_ADMIN_TOKEN"]
        assert token.startswith("${HOOKSPAWN_ADMIN_TOKEN:?")


def test_each_served_service_answers_to_its_own_name(compose: dict[str, Any]) -> None:
    # web listens on 0.0.0.0 there: without allowed hosts every Host would be answered
    served = [
        name
        for name, spec in compose["services"].items()
        if spec.get("command", [None, None])[:2] == ["hookspawn", "web"]
    ]
    assert served == ["web"]
    for name in served:
        allowed = compose["services"][name]["environment"]["HOOKSPAWN_ALLOWED_HOSTS"]
        assert name in split_csv(allowed.replace("${HOOKSPAWN_ALLOWED_HOSTS:-}", ""))
        assert "${HOOKSPAWN_ALLOWED_HOSTS:-}" in allowed  # the operator's names come on top


def test_every_variable_compose_reads_is_documented_in_readme() -> None:
    text = (ROOT / "compose.yaml").read_text()
    # ${VAR}, ${VAR:-default}, ${VAR:?message}; $$ is compose's escape for a literal $
    read = set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
    assert "HOOKSPAWN_WEBHOOK_SECRET" in read
    readme = (ROOT / "README.md").read_text()
    assert sorted(v for v in read if f"`{v}`" not in readme) == []


def event_types(data: bytes) -> list[str]:
    """The `type` of each Celery event in one published message (task events come batched)."""
    body = json.loads(base64.b64decode(json.loads(data)["body"]))
    return [str(event["type"]) for event in (body if isinstance(body, list) else [body])]


@pytest.mark.slow
def test_worker_healthcheck_pings_its_own_node_and_events_are_sent(
    compose: dict[str, Any], redis_url: str, tmp_path: Path
) -> None:
    worker = compose["services"]["worker"]
    kind, script = worker["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    script = script.replace("$$", "$")  # what the container's shell receives
    command = worker["command"]
    assert command[:2] == ["hookspawn", "worker"]

    client = redis.Redis.from_url(redis_url)
    events = client.pubsub()  # type: ignore[no-untyped-call]
    events.psubscribe("*celeryev*")
    env = environment({"HOOKSPAWN_REDIS_URL": redis_url, "HOOKSPAWN_AGENTS_DIR": str(tmp_path)})
    argv = [str(Path(sys.executable).parent / "hookspawn"), *command[1:]]
    proc = launch("worker", argv, env=env, log=tmp_path / "worker.log")
    seen: set[str] = set()

    def saw(*names: str) -> bool:
        if not proc.alive():
            pytest.fail(f"worker exited with {proc.popen.returncode}:\n{proc.log_text()}")
        while (message := events.get_message(timeout=0.05)) is not None:
            if message["type"] == "pmessage":
                seen.update(event_types(message["data"]))
        return set(names) <= seen

    def ping(hostname: str) -> subprocess.CompletedProcess[str]:
        shell_env = {**env, "HOSTNAME": hostname, "PATH": f"{Path(sys.executable).parent}:"}
        shell_env["PATH"] += os.environ.get("PATH", "")
        return subprocess.run(
            ["sh", "-c", script], env=shell_env, capture_output=True, text=True, timeout=60
        )

    try:
        wait_for(lambda: saw("worker-online"), timeout=60)
        make_celery(redis_url).send_task(PROCESS_DELIVERY, args=["no-such-delivery"])
        wait_for(lambda: saw("task-received", "task-started", "task-succeeded"), timeout=60)

        own = ping(socket.gethostname())
        assert own.returncode == 0, own.stdout + own.stderr
        assert f"celery@{socket.gethostname()}: OK" in own.stdout
        other = ping("another-replica")
        assert other.returncode != 0, other.stdout  # the running replica does not answer
    finally:
        events.close()
        client.close()
        proc.stop(60)
