"""compose.yaml, the Dockerfile and .dockerignore: real subcommands, one image, a durable Redis."""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from hookspawn.cli import main
from hookspawn.cli.parser import build_parser
from tests.conftest import wait_for
from tests.procs import environment, launch
from tests.test_fresh_machine import Call, Machine
from tests.tool_marks import REQUIRE_ALL
from workers.celery_app import PROCESS_DELIVERY, make_celery
from workers.settings import Settings, split_csv

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def test_every_hookspawn_command_is_a_real_subcommand(compose: dict[str, Any]) -> None:
    commands = [s["command"] for s in compose["services"].values() if "command" in s]
    hookspawn = [c for c in commands if c[0] == "hookspawn"]
    assert {c[1] for c in hookspawn} == {"web", "worker", "runner"}
    for command in hookspawn:
        args = build_parser().parse_args(
            command[1:]
        )  # exits (fails the test) on a bad command line
        assert args.command == command[1]
    assert ["hookspawn", "check"] not in commands


def test_redis_is_durable(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    assert re.fullmatch(r"redis:7\.\d+", redis["image"]), redis["image"]  # a minor version
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
    assert web["build"] == {"context": ".", "target": "app"}
    assert "build" not in worker  # built once, by web
    assert web["image"] == worker["image"] == "hookspawn:local"
    assert worker["pull_policy"] == "never"


def dockerfile_steps() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [
        " ".join(line.split())
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


# --- the Dockerfile, its steps run: COPY into a scratch root, RUN with stand-ins -------------

#: programs a RUN step may call that would touch this machine: recorded, with what the
#: working directory held when called; nothing else done (apt-get and npm come from Machine)
INERT = ("pip", "useradd", "mkdir", "chown", "rm")

INERT_STUB = """#!/bin/sh
{{ printf '%s' {name}; for a in "$@"; do printf '\\t%s' "$a"; done
  printf '\\t@cwd=%s\\t@venv=%s\\t@require=%s\\n' "$PWD" "$(ls -A | tr '\\n' ' ')" ""; }} \\
  >> "$SETUP_RECORD"
"""


def run_dockerfile(tmp_path: Path) -> tuple[Machine, dict[str, Path]]:
    """Every stage of the Dockerfile, each in a directory of its own: COPY copies from the
    build context (failing on a source .dockerignore leaves out), RUN runs in the stage's
    working directory with stand-ins for the package managers; what they were asked is the
    machine's record (for pip and the other stand-ins, with what the directory held)."""
    machine = Machine(tmp_path)
    for name in INERT:
        path = machine.stubs / name
        path.write_text(INERT_STUB.format(name=name))
        path.chmod(0o755)
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    stages: dict[str, Path] = {}
    root = workdir = tmp_path
    for step in dockerfile_steps():
        instruction, _, rest = step.partition(" ")
        if instruction == "FROM":
            base, _, name = rest.partition(" AS ")
            root = tmp_path / f"stage-{name}"
            if base in stages:
                shutil.copytree(stages[base], root, symlinks=True)
            else:
                root.mkdir()
            stages[name] = root
            workdir = root
        elif instruction == "WORKDIR":
            workdir = root / rest.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif instruction == "COPY":
            *sources, dest = rest.split()
            for source in sources:
                assert not any(fnmatch.fnmatch(source, p) for p in ignored), (source, ignored)
                target = (
                    workdir / dest / Path(source).name if dest.endswith("/") else workdir / dest
                )
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, target, dirs_exist_ok=True, symlinks=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(ROOT / source, target)
        elif instruction == "RUN":
            done = subprocess.run(
                ["sh", "-ec", rest], cwd=workdir, env=machine.env(),
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, (step, done.stdout, done.stderr)
    return machine, stages


def held(call: Call) -> set[str]:
    """What the working directory held when an inert stand-in was called."""
    return set(call.info["venv"].split())


@pytest.mark.slow
def test_the_image_installs_the_lock_before_the_source_and_the_runner_what_doctor_needs(
    tmp_path: Path,
) -> None:
    machine, stages = run_dockerfile(tmp_path)
    assert set(stages) == {"app", "runner"}
    calls = machine.calls()
    pips = [c for c in calls if c.program == "pip"]
    assert len(pips) == 2  # both in app, which the runner builds on
    lock, package = pips[0], pips[1]
    # the dependencies exactly as the lock pins them, before any source is there
    assert lock.args[-2:] == ["-r", "requirements.lock"] and "install" in lock.args
    assert held(lock) == {"requirements.lock"}, held(lock)
    # then the package itself, with every package it is made of, leaving the dependencies be
    assert package.args[-1] == "." and "--no-deps" in package.args
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {name.rstrip("*") for name in found} | {"pyproject.toml"} <= held(package)
    assert "tests" not in held(package)

    # the runner's programs: after its apt-get and npm, doctor finds all the runner needs, the
    # harnesses at the versions scripts/setup installs for the tests
    assert any(c.program == "apt-get" and "install" in c.args for c in calls)
    env = machine.env(PATH=os.pathsep.join([str(machine.system), machine.path]))
    doctor = subprocess.run(
        [sys.executable, "-m", "hookspawn.cli", "doctor"],
        env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    image_npm = sorted(
        a for c in calls if c.program == "npm" and "install" in c.args for a in c.args if "@" in a
    )
    (tmp_path / "setup").mkdir()
    setup = Machine(tmp_path / "setup")
    setup_env = setup.venv(tmp_path / "setup" / "venv")
    ran = subprocess.run(
        [str(ROOT / "scripts" / "setup")], cwd=ROOT, env=setup_env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    setup_npm = sorted(
        a for c in setup.calls("npm") if "install" in c.args for a in c.args if "@" in a
    )
    assert image_npm == setup_npm and len(image_npm) == 3, (image_npm, setup_npm)


def lock_pins() -> dict[str, str]:
    """requirements.lock: normalized project name → its exact version."""
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and re.fullmatch(r"[\w.+!-]+", version), f"not an exact pin: {line!r}"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_lock_pins_every_runtime_dependency_and_not_hookspawn() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = lock_pins()
    assert "hookspawn" not in pins
    for requirement in project["dependencies"]:
        name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
        assert re.sub(r"[-_.]+", "-", name).lower() in pins, f"{requirement} not in the lock"
        exact = re.search(r"==([\w.]+)$", requirement)
        if exact:  # an exact pin in pyproject is the lock's version too
            assert pins[re.sub(r"[-_.]+", "-", name).lower()] == exact.group(1)


def test_the_runner_service_runs_sessions_from_the_runner_image(compose: dict[str, Any]) -> None:
    runner = compose["services"]["runner"]
    assert runner["profiles"] == ["runner"]
    assert runner["build"] == {"context": ".", "target": "runner"}
    assert runner["command"][:2] == ["hookspawn", "runner"]
    build_parser().parse_args(runner["command"][1:])
    assert runner["environment"]["HOOKSPAWN_RUNNER"] == "local"
    web = compose["services"]["web"]["environment"]
    own = {"HOOKSPAWN_RUNNER", "HOOKSPAWN_SANDBOX_CONFIG"}
    assert {k: v for k, v in runner["environment"].items() if k not in own} == {
        k: v for k, v in web.items() if k not in own
    }


def test_the_runner_mounts_the_shipped_sandbox_config_and_it_passes_sandbox_check(
    compose: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    runner = compose["services"]["runner"]
    inside = runner["environment"]["HOOKSPAWN_SANDBOX_CONFIG"]
    (mount,) = [v for v in runner["volumes"] if v.split(":")[-2] == inside]
    host = mount.rsplit(":", 2)[0]
    source = re.fullmatch(r"\$\{HOOKSPAWN_SANDBOX_HOST_CONFIG:-([^}]+)\}", host)
    assert source is not None and mount.endswith(":ro"), mount
    shipped = ROOT / source.group(1)
    assert json.loads(shipped.read_text())["sandbox"]["backend"] == "srt"
    # what the runner's start checks, the probe aside (the image has srt; this machine may not)
    assert main(["sandbox", "check", str(shipped)]) == 0, capsys.readouterr()
    # the runner keeps web's volumes beside it (YAML merge keys do not merge lists)
    assert set(compose["services"]["web"]["volumes"]) <= set(runner["volumes"])


def test_dockerignore_keeps_environments_data_and_keys_out() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".hookspawn", "*.pem", ".env", "tests"} <= ignored


HOOKSPAWN_SERVICES = ("web", "worker", "runner")


#: the App's files `github-app create` wrote: the host variable naming each, the compose
#: secret, the variable the containers read it by
APP_FILES = {
    "HOOKSPAWN_GITHUB_PRIVATE_KEY_FILE": (
        "github-app-private-key", "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH"
    ),
    "HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE": (
        "github-app-webhook-secret", "HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE"
    ),
}  # fmt: skip


def test_the_apps_key_and_webhook_secret_reach_the_containers_as_secrets(
    compose: dict[str, Any],
) -> None:
    for host, (name, inside) in APP_FILES.items():
        # no App: /dev/null, never read
        assert compose["secrets"][name]["file"] == f"${{{host}:-/dev/null}}"
        for service in HOOKSPAWN_SERVICES:
            spec = compose["services"][service]
            assert name in spec["secrets"]
            assert spec["environment"][inside] == f"/run/secrets/{name}"


SECRETS = {
    "HOOKSPAWN_WEBHOOK_SECRET": "webhook-secret",
    "HOOKSPAWN_ADMIN_TOKEN": "admin-token",
    "HOOKSPAWN_DISPATCH_SECRET": "dispatch-secret",
}


def test_the_secrets_reach_the_containers_as_files(compose: dict[str, Any]) -> None:
    # compose itself requires only the admin token: the webhook secret may be the App's, the
    # dispatch secret is needed with a dispatch URL alone (`hookspawn deploy check` says so)
    (required,) = compose["x-required"]
    assert required.startswith("${HOOKSPAWN_ADMIN_TOKEN:?")
    for variable, name in SECRETS.items():
        assert compose["secrets"][name] == {"environment": variable}
        for service in HOOKSPAWN_SERVICES:
            spec = compose["services"][service]
            assert name in spec["secrets"]
            assert spec["environment"][f"{variable}_FILE"] == f"/run/secrets/{name}"
            assert variable not in spec["environment"]  # never the secret itself


def test_the_public_url_is_required(compose: dict[str, Any]) -> None:
    for service in HOOKSPAWN_SERVICES:
        url = compose["services"][service]["environment"]["HOOKSPAWN_PUBLIC_URL"]
        assert url.startswith("${HOOKSPAWN_PUBLIC_URL:?")


def documented_settings() -> set[str]:
    """The variables of the settings table (the first table of docs/configuration.md)."""
    section = (ROOT / "docs" / "configuration.md").read_text().split("\n## Configuration\n", 1)[1]
    table = section.split("\n\n`compose.yaml`", 1)[0]
    return {
        name
        for row in table.splitlines()
        if row.startswith("| `HOOKSPAWN_")
        for name in re.findall(r"`(HOOKSPAWN_[A-Z_]+)`", row.split(" | ", 1)[0])
    }


#: the settings of a Redis watched by Sentinel: compose runs its own single Redis instead
#: (docs/configuration.md says so under the table)
SENTINEL_SETTINGS = {
    "HOOKSPAWN_REDIS_SENTINELS",
    "HOOKSPAWN_REDIS_SENTINEL_MASTER",
    "HOOKSPAWN_REDIS_PASSWORD",
    "HOOKSPAWN_REDIS_SENTINEL_PASSWORD",
    "HOOKSPAWN_REDIS_PASSWORD_FILE",
    "HOOKSPAWN_REDIS_SENTINEL_PASSWORD_FILE",
    "HOOKSPAWN_REDIS_MIN_REPLICAS_ACK",
    "HOOKSPAWN_REDIS_ACK_TIMEOUT",
}


def test_every_documented_setting_is_passed(compose: dict[str, Any]) -> None:
    documented = documented_settings() - SENTINEL_SETTINGS
    assert documented_settings() >= SENTINEL_SETTINGS  # each named in the table
    assert {"HOOKSPAWN_TRUSTED_PROXIES", "HOOKSPAWN_SESSION_DISK_LIMIT"} <= documented
    for service in HOOKSPAWN_SERVICES:
        env = compose["services"][service]["environment"]
        missing = {name for name in documented if name not in env and f"{name}_FILE" not in env} - {
            f"{name}_FILE" for name in SECRETS
        }
        assert sorted(missing) == [], service


def test_compose_defaults_are_valid_settings(
    compose: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what the containers get with only the required variables set
    for name in [name for name in os.environ if name.startswith("HOOKSPAWN_")]:
        monkeypatch.delenv(name)
    for name, raw in compose["services"]["worker"]["environment"].items():
        value = re.sub(r"\$\{[A-Z_]+:\?[^}]*\}", "https://hooks.example.com", str(raw))
        value = re.sub(r"\$\{[A-Z_]+:?-([^}]*)\}", r"\1", value)
        if value.startswith("/run/secrets/"):
            value = str(tmp_path / value.rsplit("/", 1)[1])
            Path(value).write_text("s3cret\n")
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.public_url == "https://hooks.example.com"
    assert settings.webhook_secret == ["s3cret"]
    assert settings.dispatch_secret == settings.admin_token == "s3cret"
    assert settings.runner_user == "nobody"
    # an empty path is no path, not the working directory
    assert settings.sandbox_config is None
    assert settings.workspaces_dir is None
    assert settings.secrets_file is None
    assert settings.session_retention is None


def test_flower_is_published_on_loopback_behind_basic_auth(compose: dict[str, Any]) -> None:
    flower = compose["services"]["flower"]
    assert flower["profiles"] == ["flower"]
    assert all(str(port).startswith("127.0.0.1:") for port in flower["ports"])
    assert flower["secrets"] == ["flower-basic-auth"]
    assert compose["secrets"]["flower-basic-auth"] == {"environment": "HOOKSPAWN_FLOWER_BASIC_AUTH"}
    script = flower["command"][-1]
    assert "test -s /run/secrets/flower-basic-auth" in script  # none: Flower does not start
    assert 'FLOWER_BASIC_AUTH="$$(cat /run/secrets/flower-basic-auth)"' in script


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
    # and the variables compose secrets are made of
    secrets = yaml.safe_load(text)["secrets"].values()
    read |= {spec["environment"] for spec in secrets if "environment" in spec}
    assert "HOOKSPAWN_WEBHOOK_SECRET" in read
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert sorted(v for v in read if f"`{v}`" not in documented) == []


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


def docker_compose() -> list[str] | None:
    """Compose v2 where this machine has it: `docker compose` (the CLI's plugin), or
    `docker-compose` (scripts/setup puts it in the virtual environment); else None."""
    candidates = []
    if docker := shutil.which("docker"):
        candidates.append([docker, "compose"])
    for standalone in (
        Path(sys.executable).parent / "docker-compose",
        shutil.which("docker-compose"),
    ):
        if standalone and Path(standalone).is_file():
            candidates.append([str(standalone)])
    for command in candidates:
        try:
            found = subprocess.run(
                [*command, "version"], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if found.returncode == 0 and " v2." in found.stdout:
            return command
    return None


@pytest.fixture(scope="module")
def compose_command() -> list[str]:
    command = docker_compose()
    if command is None:
        why = (
            "Docker Compose v2 is not on this machine (`docker compose` or `docker-compose`; "
            "scripts/setup installs it)"
        )
        if os.environ.get(REQUIRE_ALL) == "1":
            pytest.fail(f"{why}; {REQUIRE_ALL}=1 makes that a failure", pytrace=False)
        pytest.skip(why)
    return command


EXAMPLE = ROOT / "deploy" / "compose.env.example"


def example_values() -> dict[str, str]:
    """deploy/compose.env.example's variables, as written."""
    values = {}
    for line in EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, value = line.partition("=")
            assert sep and re.fullmatch(r"HOOKSPAWN_[A-Z0-9_]+", name), line
            values[name] = value
    return values


def filled_example(tmp_path: Path, **changes: str | None) -> Path:
    """The example .env filled in the way docs/deploy-compose.md says, for every profile: an App
    carried in from `github-app create`'s files, a dispatch URL with its secret, the runner, TLS;
    `changes` on top (None: the line left out)."""
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    (app / "github-app.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    (app / "webhook-secret").write_text("apps-own\n")
    values = example_values()
    values.update(
        HOOKSPAWN_ADMIN_TOKEN="admin-t0ken",
        HOOKSPAWN_GITHUB_APP_ID="4242",
        HOOKSPAWN_GITHUB_PRIVATE_KEY_FILE=str(app / "github-app.pem"),
        HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE=str(app / "webhook-secret"),
        HOOKSPAWN_DISPATCH_URL="https://dispatch.example.com/sessions",
        HOOKSPAWN_DISPATCH_SECRET="dispatch-s3cret",
        HOOKSPAWN_RUNNER="local",
        HOOKSPAWN_FLOWER_BASIC_AUTH="admin:flower-pw",
        HOOKSPAWN_GRAFANA_ADMIN_PASSWORD="grafana-pw",
        HOOKSPAWN_TLS_DOMAIN="hooks.example.com",
        HOOKSPAWN_WEB_PUBLISH="127.0.0.1:8000",
    )
    for name, value in changes.items():
        if value is None:
            values.pop(name, None)
        else:
            values[name] = value
    path = tmp_path / "filled.env"
    path.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
    return path


def compose_env() -> dict[str, str]:
    """This process's environment less anything compose or hookspawn would read."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("HOOKSPAWN_", "COMPOSE_"))}


#: each profile and the services it adds to the ones every start runs
PROFILES = {
    "": set(),
    "runner": {"runner"},
    "flower": {"flower"},
    "monitoring": {"prometheus", "grafana"},
    "tls": {"caddy"},
}


def test_the_example_env_names_what_compose_requires_and_reads_for_its_secrets(
    compose: dict[str, Any],
) -> None:
    text = (ROOT / "compose.yaml").read_text()
    required = set(re.findall(r"(?<!\$)\$\{([A-Z_]+):\?", text))
    secrets = {spec["environment"] for spec in compose["secrets"].values() if "environment" in spec}
    files = {
        re.fullmatch(r"\$\{([A-Z_]+):-/dev/null\}", spec["file"]).group(1)  # type: ignore[union-attr]
        for spec in compose["secrets"].values()
        if "file" in spec
    }
    assert {"HOOKSPAWN_ADMIN_TOKEN", "HOOKSPAWN_PUBLIC_URL"} <= required
    assert sorted((required | secrets | files) - set(example_values())) == []
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert sorted(v for v in example_values() if f"`{v}`" not in documented) == []


@pytest.mark.slow
def test_docker_compose_renders_every_profile_with_the_documented_variables(
    compose_command: list[str], tmp_path: Path
) -> None:
    env_file = filled_example(tmp_path)
    base = [*compose_command, "-f", str(ROOT / "compose.yaml"), "--env-file", str(env_file)]
    rendered: dict[str, Any] = {}
    for profile, added in PROFILES.items():
        argv = [*base, *(["--profile", profile] if profile else []), "config", "--format", "json"]
        done = subprocess.run(argv, env=compose_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (profile, done.stderr)
        services = json.loads(done.stdout)["services"]
        assert set(services) == {"redis", "web", "worker"} | added, profile
        rendered.update(services)
    assert rendered["web"]["image"] == rendered["worker"]["image"] == "hookspawn:local"
    # the runner's sandbox config is the shipped one, mounted read-only where it is read
    runner = rendered["runner"]
    (mount,) = [v for v in runner["volumes"] if v["target"] == "/etc/hookspawn/sandbox.json"]
    assert mount["source"] == str(ROOT / "deploy" / "sandbox" / "sandbox.json")
    assert mount["read_only"] is True
    assert runner["environment"]["HOOKSPAWN_SANDBOX_CONFIG"] == mount["target"]
    # the proxy web believes is the tls profile's, at its fixed address
    address = rendered["caddy"]["networks"]["edge"]["ipv4_address"]
    assert split_csv(rendered["web"]["environment"]["HOOKSPAWN_TRUSTED_PROXIES"]) == [address]
    assert [p["host_ip"] for p in rendered["web"]["ports"] if p["target"] == 8000] == ["127.0.0.1"]

    # without a required variable compose refuses, naming it
    for name in ("HOOKSPAWN_ADMIN_TOKEN", "HOOKSPAWN_PUBLIC_URL"):
        env_file = filled_example(tmp_path, **{name: None})
        refused = subprocess.run(
            [*base[:-1], str(env_file), "config"],
            env=compose_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert refused.returncode != 0 and name in refused.stderr, (name, refused.stderr)


def test_the_tls_profile_puts_a_pinned_caddy_in_front_of_web(compose: dict[str, Any]) -> None:
    services = compose["services"]
    caddy = services["caddy"]
    assert caddy["profiles"] == ["tls"]
    assert re.fullmatch(r"caddy:\d+\.\d+\.\d+", caddy["image"]), caddy["image"]
    # no domain, no Caddy (compose interpolates every profile, so it cannot require it itself)
    script = caddy["entrypoint"][-1]
    assert script.startswith('test -n "$$HOOKSPAWN_TLS_DOMAIN"'), script
    assert caddy["environment"] == {"HOOKSPAWN_TLS_DOMAIN": "${HOOKSPAWN_TLS_DOMAIN:-}"}
    (config,) = [v for v in caddy["volumes"] if v.endswith(":/etc/caddy/Caddyfile:ro")]
    site = [
        line.strip()
        for line in (ROOT / config.split(":")[0]).read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert site == ["{$HOOKSPAWN_TLS_DOMAIN} {", "reverse_proxy web:8000", "}"]
    assert sorted(caddy["ports"]) == ["443:443", "443:443/udp", "80:80"]
    # web is on the proxy's network and believes its fixed address; its own port is the
    # operator's to put on loopback
    address = caddy["networks"]["edge"]["ipv4_address"]
    assert address == "${HOOKSPAWN_EDGE_PROXY_ADDRESS:-172.30.250.2}"
    web = services["web"]
    assert "edge" in web["networks"]
    assert web["environment"]["HOOKSPAWN_TRUSTED_PROXIES"].startswith(f"{address},")
    assert web["ports"][0] == "${HOOKSPAWN_WEB_PUBLISH:-8000}:8000"
