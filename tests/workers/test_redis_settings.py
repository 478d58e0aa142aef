"""Where the store is (a URL, or a primary through Redis Sentinel) and how many replicas must
acknowledge a write: read from the environment, refused clearly when half set or both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from workers.celery_app import celery_config
from workers.redis_target import Sentinels
from workers.settings import Settings

SENTINEL_VARIABLES = (
    "HOOKSPAWN_REDIS_URL",
    "HOOKSPAWN_REDIS_SENTINELS",
    "HOOKSPAWN_REDIS_SENTINEL_MASTER",
    "HOOKSPAWN_REDIS_PASSWORD",
    "HOOKSPAWN_REDIS_SENTINEL_PASSWORD",
)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SENTINEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"{name}_FILE", raising=False)


def test_sentinels_with_their_passwords_from_files_make_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "primary").write_text("p@ss word\n")
    (tmp_path / "sentinel").write_text("s3ntinel\n")
    monkeypatch.setenv("HOOKSPAWN_REDIS_SENTINELS", "10.0.0.5:26379, sentinel-b:26380,[::1]:26381")
    monkeypatch.setenv("HOOKSPAWN_REDIS_SENTINEL_MASTER", "hookspawn")
    monkeypatch.setenv("HOOKSPAWN_REDIS_PASSWORD_FILE", str(tmp_path / "primary"))
    monkeypatch.setenv("HOOKSPAWN_REDIS_SENTINEL_PASSWORD_FILE", str(tmp_path / "sentinel"))
    settings = Settings()
    target = settings.redis_target
    assert target == Sentinels(
        (("10.0.0.5", 26379), ("sentinel-b", 26380), ("::1", 26381)),
        "hookspawn",
        sentinel_password="s3ntinel",
        password="p@ss word",
    )
    assert "p@ss" not in repr(target) and "s3ntinel" not in repr(target)
    assert "p@ss" not in repr(settings) and "s3ntinel" not in repr(settings)
    config = celery_config(target)
    assert config["broker_url"] == ";".join(
        f"sentinel://:p%40ss%20word@{host}/0"
        for host in ("10.0.0.5:26379", "sentinel-b:26380", "[::1]:26381")
    )
    options = config["broker_transport_options"]
    assert options["master_name"] == "hookspawn"
    assert options["sentinel_kwargs"]["password"] == "s3ntinel"
    assert options["visibility_timeout"] == 1800  # kept beside the sentinel's


def test_a_url_alone_is_the_target_and_nothing_waits_for_replicas() -> None:
    settings = Settings(redis_url="redis://127.0.0.1:6379/0")
    assert settings.redis_target == "redis://127.0.0.1:6379/0"
    assert settings.replica_ack.replicas == 0
    assert celery_config("redis://127.0.0.1:6379/0")["broker_url"] == "redis://127.0.0.1:6379/0"
    assert Settings().redis_target is None


@pytest.mark.parametrize(
    ("value", "milliseconds"), [("50ms", 50), ("250 ms", 250), ("1s", 1000), ("5s", 5000)]
)
def test_the_ack_timeout_takes_milliseconds_or_seconds(value: str, milliseconds: int) -> None:
    settings = Settings(redis_min_replicas_ack="1", redis_ack_timeout=value)
    assert settings.replica_ack.replicas == 1
    assert settings.replica_ack.timeout_ms == milliseconds


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"redis_sentinels": "a:1"}, "HOOKSPAWN_REDIS_SENTINEL_MASTER"),
        ({"redis_sentinel_master": "m"}, "without HOOKSPAWN_REDIS_SENTINELS"),
        (
            {"redis_sentinels": "a:1", "redis_sentinel_master": "m", "redis_url": "redis://x"},
            "both set",
        ),
        ({"redis_password": "x"}, "goes in the URL"),
        ({"redis_sentinel_password": "x"}, "only used with HOOKSPAWN_REDIS_SENTINELS"),
        ({"redis_sentinels": "no-port", "redis_sentinel_master": "m"}, "not host:port"),
        ({"redis_sentinels": "a:99999", "redis_sentinel_master": "m"}, "not host:port"),
        ({"redis_ack_timeout": "50"}, "not a duration in ms or s"),
        ({"redis_ack_timeout": "10s"}, "less than or equal to 5000"),
        ({"redis_min_replicas_ack": "-1"}, "greater than or equal to 0"),
    ],
)
def test_half_or_doubly_set_redis_settings_are_refused(given: dict[str, str], said: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(**given)  # type: ignore[arg-type]
    assert said in str(raised.value)


def test_the_command_line_says_it_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKSPAWN_")}
    env["HOOKSPAWN_REDIS_SENTINELS"] = "127.0.0.1:26379"
    env["HOOKSPAWN_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "hookspawn.cli", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "hookspawn worker: HOOKSPAWN_REDIS_SENTINELS is set without "
        "HOOKSPAWN_REDIS_SENTINEL_MASTER (the name the sentinels know the primary by)"
    ]
