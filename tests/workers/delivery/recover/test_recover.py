"""`hookspawn deliveries recover` against the GitHub stand-in's delivery log and a real store."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from hookspawn.cli import main
from tests.github_standin import GitHubStandin, other_private_key_pem
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.record import NewDelivery
from workers.delivery.recover import recover
from workers.github.client import GitHubApp


def ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def store_delivery(url: str, guid: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        DeliveryStore(client, retention=timedelta(days=3)).record(
            NewDelivery(guid, "push", None, "acme/api", 7, "1", b"{}", time.time())
        )
    finally:
        client.close()


@pytest.fixture
def github() -> Iterator[GitHubStandin]:
    with GitHubStandin(max_per_page=2) as standin:
        yield standin


@pytest.fixture
def log(github: GitHubStandin, redis_url: str) -> GitHubStandin:
    """Log rows: recorded and fine, failed, lost, failed-but-recorded, retried, and old ones."""
    rows = [
        (1, "g-ok", 200, ago(minutes=90), True),
        (2, "g-failed", 503, ago(minutes=80), False),
        (3, "g-lost", 202, ago(minutes=70), False),
        (4, "g-timeout", 504, ago(minutes=60), True),
        (5, "g-retried", 500, ago(minutes=50), True),
        (6, "g-retried", 202, ago(minutes=40), True),
        (0, "g-old", 500, ago(hours=5), False),
        (-1, "g-older", 500, ago(hours=6), False),
        (-2, "g-older", 500, ago(hours=7), False),
        (-3, "g-older", 500, ago(hours=8), False),
    ]
    for log_id, guid, status, when, stored in rows:  # the log lists newest (highest id) first
        github.add_hook_delivery(
            log_id,
            guid=guid,
            event="push",
            status_code=status,
            delivered_at=when,
        )
        if stored:
            store_delivery(redis_url, guid)
    return github


@pytest.fixture
def env(
    log: GitHubStandin, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> GitHubStandin:
    key = tmp_path / "app.pem"
    key.write_text(log.private_key_pem)
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOOKSPAWN_REDIS_URL", redis_url)
    monkeypatch.setenv("HOOKSPAWN_GITHUB_APP_ID", log.app_id)
    monkeypatch.setenv("HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH", str(key))
    monkeypatch.setenv("HOOKSPAWN_GITHUB_API_URL", log.url)
    return log


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["deliveries", "recover", *args])
    return code, out.getvalue()


def test_dry_run_lists_missed_deliveries_and_redelivers_nothing(env: GitHubStandin) -> None:
    code, text = run("--since", "2h")
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].endswith(": 6 attempts, 5 deliveries, 3 missed")
    would = [line for line in lines if line.startswith("would redeliver")]
    assert [line.split()[2] for line in would] == ["g-failed", "g-lost", "g-timeout"]
    assert "attempt 2): failed on GitHub's side (HTTP 503" in would[0]
    assert would[0].endswith("; not in the delivery store")
    assert would[1].endswith("attempt 3): not in the delivery store")
    assert "failed on GitHub's side (HTTP 504" in would[2]
    assert "not in the delivery store" not in would[2]
    assert lines[-1] == "nothing was redelivered: run again with --apply to request these"
    assert env.redelivered == []
    assert env.count("hook_delivery_attempts") == 0
    # cursor pages of 2 (of 5), and reading stops at the first delivery older than the window
    assert env.count("hook_deliveries") == 4
    assert env.requests_to("hook_deliveries")[1].query["cursor"] == "2"


def test_apply_requests_the_newest_attempt_of_each(env: GitHubStandin) -> None:
    code, text = run("--since", "2h", "--apply")
    assert code == 0, text
    assert sorted(env.redelivered) == [2, 3, 4]
    assert text.count("redelivery requested") == 3
    assert "would redeliver" not in text


def test_a_failed_redelivery_is_reported_and_the_rest_go_on(env: GitHubStandin) -> None:
    env.fail_next("hook_delivery_attempts", "server_error", after=1)
    code, text = run("--since", "2h", "--apply")
    assert code == 1
    assert sorted(env.redelivered) == [2, 4]
    assert "g-lost: redelivery failed: GitHub answered 500" in text


def test_window_is_capped_at_the_store_retention(
    env: GitHubStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKSPAWN_RETENTION", "3h")
    code, text = run("--since", "3d")
    assert code == 0
    assert "capped at the store's retention" in text
    assert "g-old" not in text
    monkeypatch.setenv("HOOKSPAWN_RETENTION", "3d")
    code, text = run("--since", "6h")
    assert "g-old" in text
    assert "capped" not in text


def test_nothing_missed(github: GitHubStandin, redis_url: str) -> None:
    github.add_hook_delivery(1, guid="g1", event="push", delivered_at=ago(minutes=1))
    store_delivery(redis_url, "g1")
    app = GitHubApp(app_id=github.app_id, private_key=github.private_key_pem, api_url=github.url)
    client = redis.Redis.from_url(redis_url)
    try:
        report = recover(
            app, client, since=timedelta(hours=1), retention=timedelta(days=3), apply=True
        )
    finally:
        client.close()
    assert (report.attempts, report.deliveries, report.missed) == (1, 1, [])
    assert github.redelivered == []


def test_configuration_problems_are_said_plainly(
    env: GitHubStandin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit, match="--since: not a duration"):
        run("--since", "soon")
    monkeypatch.delenv("HOOKSPAWN_GITHUB_APP_ID")
    with pytest.raises(SystemExit, match="HOOKSPAWN_GITHUB_APP_ID"):
        run()
    monkeypatch.setenv("HOOKSPAWN_GITHUB_APP_ID", env.app_id)
    monkeypatch.delenv("HOOKSPAWN_REDIS_URL")
    with pytest.raises(SystemExit, match="HOOKSPAWN_REDIS_URL"):
        run()


def test_refused_credentials_exit_two(
    env: GitHubStandin,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wrong = tmp_path / "wrong.pem"
    wrong.write_text(other_private_key_pem())
    monkeypatch.setenv("HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH", str(wrong))
    code, _ = run("--apply")
    assert code == 2
    assert "GitHub answered 401" in capsys.readouterr().err
    assert env.redelivered == []
