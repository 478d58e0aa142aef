"""Registering the GitHub App through the manifest flow, end to end over real HTTP: the web
app's form and one-time state (real Redis), the code converted at the GitHub stand-in, the
credentials kept in the data directory and found by the settings."""

from __future__ import annotations

import json
import logging
import re
import stat
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest
import redis

from hookspawn.web.api import create_app
from tests.conftest import make_settings
from tests.github_standin import GitHubStandin
from tests.live_server import live_client
from workers.github.app_registration import (
    APP_FILE,
    KEY_FILE,
    SECRET_FILE,
    webhook_secret_source,
    with_registered_app,
)
from workers.github.client import GitHubApp
from workers.runtime import build_runtime
from workers.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / ".auto"
ADMIN = "admin-secret"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
PUBLIC = "https://hooks.example"


@pytest.fixture
def gh() -> Iterator[GitHubStandin]:
    with GitHubStandin(app_id="4242") as standin:
        standin.add_installation(7, "octocat", repositories=[(101, "octocat/mine")])
        yield standin


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def web(redis_url: str, data_dir: Path, gh: GitHubStandin) -> Iterator[httpx.Client]:
    settings = make_settings(
        redis_url=redis_url,
        data_dir=data_dir,
        agents_dir=EXAMPLES,
        admin_token=ADMIN,
        github_api_url=gh.url,
        public_url=PUBLIC,
        allowed_hosts=["127.0.0.1"],
    )
    rt = build_runtime(settings)
    try:
        with live_client(create_app(rt)) as client:
            yield client
    finally:
        rt.close()


def form_of(page: str) -> tuple[str, dict[str, object]]:
    """The registration form's action and the manifest it posts."""
    action = re.search(r'<form method="post" action="([^"]+)"', page)
    value = re.search(r'<input type="hidden" name="manifest" value="([^"]+)"', page)
    assert action and value, page
    return unescape(action.group(1)), json.loads(unescape(value.group(1)))


def start(web: httpx.Client, **params: str) -> tuple[str, dict[str, object]]:
    answer = web.get("/github-app/new", params=params, headers=AUTH)
    assert answer.status_code == 200, answer.text
    action, manifest = form_of(answer.text)
    state = action.partition("?state=")[2]
    assert state
    return state, manifest


def test_the_app_is_created_end_to_end(
    web: httpx.Client,
    gh: GitHubStandin,
    data_dir: Path,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    answer = web.get("/github-app/new", params={"org": "acme", "name": "acme-agents"}, headers=AUTH)
    assert answer.status_code == 200
    action, manifest = form_of(answer.text)
    assert action.startswith(f"{gh.url}/organizations/acme/settings/apps/new?state=")
    state = action.partition("?state=")[2]
    assert manifest["name"] == "acme-agents"
    assert manifest["hook_attributes"] == {"url": f"{PUBLIC}/webhooks/github", "active": True}
    assert manifest["redirect_url"] == f"{PUBLIC}/github-app/callback"
    assert manifest["default_events"] == ["issue_comment", "pull_request", "push", "repository"]
    # the state waits in Redis, with an expiry
    (key,) = redis_client.keys("*github-app-state*")
    assert 0 < redis_client.ttl(key) <= 3600

    code = gh.add_manifest_code(manifest)  # the user confirmed on GitHub
    done = web.get("/github-app/callback", params={"code": code, "state": state}, headers=AUTH)
    assert done.status_code == 200, done.text
    assert "https://github.com/apps/acme-agents/installations/new" in done.text
    assert gh.count("manifest_conversion") == 1
    (app,) = gh.converted

    key_file, secret_file = data_dir / KEY_FILE, data_dir / SECRET_FILE
    assert key_file.read_text() == gh.private_key_pem
    assert secret_file.read_text().strip() == app["webhook_secret"]
    for path in (key_file, secret_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads((data_dir / APP_FILE).read_text())["id"] == 4242

    # the key and the secret are in no Redis value and no log line
    for name in redis_client.keys("*"):
        if redis_client.type(name) == b"string":
            value = redis_client.get(name) or b""
            assert b"PRIVATE KEY" not in value and app["webhook_secret"].encode() not in value
    assert "PRIVATE KEY" not in caplog.text
    assert app["webhook_secret"] not in caplog.text
    assert redis_client.keys("*github-app-state*") == []  # used

    # the same state again: refused, nothing exchanged
    again = web.get(
        "/github-app/callback",
        params={"code": gh.add_manifest_code(manifest), "state": state},
        headers=AUTH,
    )
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "invalid_state"
    assert gh.count("manifest_conversion") == 1


def test_a_missing_or_wrong_state_exchanges_nothing(
    web: httpx.Client, gh: GitHubStandin, data_dir: Path
) -> None:
    state, manifest = start(web)
    code = gh.add_manifest_code(manifest)
    for params in (
        {"code": code},
        {"code": code, "state": "not-issued"},
        {"code": code, "state": ""},
    ):
        answer = web.get("/github-app/callback", params=params, headers=AUTH)
        assert answer.status_code == 400, params
        assert answer.json()["error"]["code"] == "invalid_state"
    assert gh.count("manifest_conversion") == 0
    assert not (data_dir / KEY_FILE).exists()
    # the issued state still works once
    answer = web.get("/github-app/callback", params={"code": code, "state": state}, headers=AUTH)
    assert answer.status_code == 200


def test_a_code_github_refuses_is_answered_and_writes_nothing(
    web: httpx.Client, gh: GitHubStandin, data_dir: Path
) -> None:
    state, _ = start(web)
    answer = web.get(
        "/github-app/callback", params={"code": "expired0code", "state": state}, headers=AUTH
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "conversion_refused"
    assert gh.count("manifest_conversion") == 1
    assert not (data_dir / KEY_FILE).exists()


def test_the_registration_pages_need_the_admin_token(web: httpx.Client, gh: GitHubStandin) -> None:
    for path in ("/github-app/new", "/github-app/callback?code=x&state=y"):
        answer = web.get(path)
        assert answer.status_code == 401, path
    assert gh.count("manifest_conversion") == 0
    bad = web.get("/github-app/new", params={"org": "not an org"}, headers=AUTH)
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid_request"


def test_the_kept_app_is_found_when_the_variables_are_unset(
    web: httpx.Client, gh: GitHubStandin, data_dir: Path
) -> None:
    state, manifest = start(web)
    code = gh.add_manifest_code(manifest)
    assert web.get("/github-app/callback", params={"code": code, "state": state}, headers=AUTH)
    (app,) = gh.converted
    bare = Settings.model_validate({"data_dir": data_dir, "github_api_url": gh.url})
    found = with_registered_app(bare)
    assert found.github_app_id == "4242"
    assert found.github_private_key_path == (data_dir / KEY_FILE).absolute()
    assert found.webhook_secret == [app["webhook_secret"]]
    # the kept key signs App calls GitHub accepts
    github = GitHubApp.from_settings(found)
    assert github is not None
    assert [i.id for i in github.list_installations()] == [7]
    # a variable that is set wins
    mine = with_registered_app(
        bare.model_copy(update={"github_app_id": "9", "webhook_secret": ["w"]})
    )
    assert (mine.github_app_id, mine.webhook_secret) == ("9", ["w"])


def kept_app(data_dir: Path, secret: str) -> None:
    """The files `github-app create` leaves in a data directory."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / APP_FILE).write_text(json.dumps({"id": 4242, "slug": "hooks"}))
    (data_dir / KEY_FILE).write_text("pem\n")
    (data_dir / SECRET_FILE).write_text(secret + "\n")


def test_the_apps_own_webhook_secret_wins_and_web_says_which_it_uses(tmp_path: Path) -> None:
    kept_app(tmp_path / "data", "apps-own")
    variable = {"HOOKSPAWN_WEBHOOK_SECRET": "operators"}
    settings = Settings.model_validate(
        {"data_dir": tmp_path / "data", "webhook_secret": ["operators"]}
    )
    found = with_registered_app(settings)
    assert found.webhook_secret == ["apps-own"]
    assert with_registered_app(found) == found  # applied twice, the same
    said = webhook_secret_source(found, variable)
    assert said == (
        f"the GitHub App's own (kept in {tmp_path / 'data' / SECRET_FILE}); "
        "HOOKSPAWN_WEBHOOK_SECRET is set too and not used"
    )

    # compose's way: the App's secret file given beside an empty HOOKSPAWN_WEBHOOK_SECRET file
    own_file, empty = tmp_path / "app-secret", tmp_path / "webhook-secret"
    own_file.write_text("from-file\n")
    empty.write_text("")
    environ = {
        "HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE": str(own_file),
        "HOOKSPAWN_WEBHOOK_SECRET_FILE": str(empty),
    }
    given = Settings.model_validate(
        {
            "data_dir": tmp_path / "none",
            "github_app_id": "7",
            "github_app_webhook_secret": "from-file",
        }
    )
    assert with_registered_app(given).webhook_secret == ["from-file"]
    assert webhook_secret_source(with_registered_app(given), environ) == (
        f"the GitHub App's own (HOOKSPAWN_GITHUB_APP_WEBHOOK_SECRET_FILE, {own_file})"
    )

    # no App: the variable, and the words name it; nothing at all: said so
    plain = with_registered_app(
        Settings.model_validate({"data_dir": tmp_path / "none", "webhook_secret": ["operators"]})
    )
    assert plain.webhook_secret == ["operators"]
    assert webhook_secret_source(plain, variable) == "HOOKSPAWN_WEBHOOK_SECRET"
    bare = Settings.model_validate({"data_dir": tmp_path / "none"})
    assert webhook_secret_source(bare, {}) == "none (every delivery is refused)"
