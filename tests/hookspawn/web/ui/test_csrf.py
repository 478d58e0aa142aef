"""The /ui login cookie: one random login per sign-in in Redis, revoked at sign-out, never
enough on its own to change state from another origin; bearer clients are unaffected."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from hookspawn.serve.redis_server import free_port
from hookspawn.web.api import create_app
from hookspawn.web.ui import logins
from tests import loopback
from tests.conftest import make_settings, wait_for
from tests.hookspawn.web.ui.chromium import Chromium, chromium_path
from tests.hostile.conftest import ADMIN_TOKEN
from tests.live_server import live_listeners, live_server
from tests.workers.delivery.pipeline.conftest import write_agents
from workers.runtime import Runtime, build_runtime

TOKEN = "csrf-admin-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
SOLO = """
name: solo
harness: claude-code
environment:
  name: runtime
  image: {kind: preset, name: node24}
"""
START = {"initialPrompt": "tidy up"}


@dataclass
class Seen:
    method: str
    path: str
    status: int
    headers: dict[str, str]


@dataclass
class Site:
    """A hookspawn (the real app over real HTTP) and every request it answered."""

    rt: Runtime
    url: str
    client: httpx.Client
    seen: list[Seen] = field(default_factory=list)

    def sessions(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client.get("/sessions", headers=BEARER).json()["items"]
        return items

    def signed_in(self) -> httpx.Client:
        """A client of its own, signed in through /ui/login (it keeps the cookie); close it."""
        client = loopback.Client(base_url=self.url, timeout=30)
        assert client.post("/ui/login", data={"token": TOKEN}).status_code == 303
        return client


@pytest.fixture
def site(tmp_path: Path, redis_url: str) -> Iterator[Site]:
    auto = write_agents(tmp_path, {"agents/solo.yaml": SOLO})
    rt = build_runtime(
        make_settings(
            redis_url=redis_url, data_dir=tmp_path / "data", agents_dir=auto, admin_token=TOKEN
        )
    )
    app = create_app(rt)
    seen: list[Seen] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}

        async def spy(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen.append(Seen(scope["method"], scope["path"], message["status"], headers))
            await send(message)

        await app(scope, receive, spy)

    with live_server(recording) as url, loopback.Client(base_url=url, timeout=30) as client:
        yield Site(rt, url, client, seen)
    rt.close()


def test_each_sign_in_is_its_own_login_in_redis(site: Site, redis_client: redis.Redis) -> None:
    first, second = site.signed_in(), site.signed_in()
    ids = {first.cookies["hookspawn_session"], second.cookies["hookspawn_session"]}
    assert len(ids) == 2 and all(len(i) >= 40 for i in ids)
    stored = sorted(redis_client.scan_iter("hookspawn:ui-session:*"))
    assert len(stored) == 2
    for key in stored:
        assert 0 < int(redis_client.ttl(key)) <= 12 * 3600  # expires on the server too
        assert not any(i.encode() in key for i in ids)  # the key is a digest, not the cookie
    assert first.get("/deliveries").status_code == 200

    out = first.post("/ui/logout", headers={"Sec-Fetch-Site": "same-origin"})
    assert out.status_code == 303
    assert len(list(redis_client.scan_iter("hookspawn:ui-session:*"))) == 1
    # the revoked id is refused even when a client keeps sending it
    stale = loopback.Client(base_url=site.url, timeout=30)
    stale.cookies.set("hookspawn_session", next(iter(ids - {second.cookies["hookspawn_session"]})))
    assert stale.get("/deliveries").status_code == 401
    assert second.get("/deliveries").status_code == 200  # the other sign-in goes on
    made_up = loopback.Client(base_url=site.url, timeout=30)
    made_up.cookies.set("hookspawn_session", "x" * 43)
    assert made_up.get("/deliveries").status_code == 401
    for client in (first, second, stale, made_up):
        client.close()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
        {"Sec-Fetch-Site": "none"},
    ],
)
def test_cookie_posts_from_elsewhere_are_refused(site: Site, headers: dict[str, str]) -> None:
    with closing(site.signed_in()) as client:
        refused = client.post("/agents/solo/sessions", json=START, headers=headers)
        assert refused.status_code == 403, refused.text
        error = refused.json()["error"]
        assert error["code"] == "cross_origin_request"
        assert "Sec-Fetch-Site" in error["message"] or "Origin" in error["message"]
        assert client.get("/deliveries").status_code == 200  # reading needs no origin
    assert site.sessions() == []


def test_every_state_changing_admin_route_documents_and_answers_the_origin_check(
    site: Site,
) -> None:
    document = site.client.get("/openapi.json", headers=BEARER).json()
    checked = []
    with closing(site.signed_in()) as client:
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                admin = operation["responses"].get("401", {}).get("description", "")
                if method in ("get", "head", "options") or not admin.startswith("unauthorized:"):
                    continue
                assert "cross_origin_request" in operation["responses"]["403"]["description"]
                url = re.sub(r"\{[^}]+\}", "x", path)
                answer = client.request(
                    method.upper(), url, json={}, headers={"Sec-Fetch-Site": "cross-site"}
                )
                assert answer.status_code == 403, (method, path, answer.text)
                assert answer.json()["error"]["code"] == "cross_origin_request"
                checked.append(f"{method.upper()} {path}")
    assert {
        "POST /agents/{name}/sessions",
        "POST /sessions/{session_id}/cancel",
        "POST /sessions/{session_id}/end",
        "POST /deliveries/{delivery_id}/replay",
        "POST /connections/sync",
    } <= set(checked), checked


def test_cookie_posts_from_its_own_pages_and_bearer_clients_pass(site: Site) -> None:
    with closing(site.signed_in()) as client:
        own = client.post(
            "/agents/solo/sessions", json=START, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert own.status_code == 201, own.text
        by_origin = client.post("/agents/solo/sessions", json=START, headers={"Origin": site.url})
        assert by_origin.status_code == 201, by_origin.text
    # the bearer token is never sent by a browser on its own: no origin check for it
    for headers in ({}, {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}):
        bearer = site.client.post("/agents/solo/sessions", json=START, headers=BEARER | headers)
        assert bearer.status_code == 201, bearer.text
    assert len(site.sessions()) == 4


class Attacker:
    """A page on another port of 127.0.0.1 (same site, other origin), as a browser meets it."""

    def __init__(self, page: str) -> None:
        body = page.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_page_elsewhere_cannot_start_a_session_in_chromium(site: Site, tmp_path: Path) -> None:
    chromium = Chromium(chromium_path(), tmp_path / "chromium-profile")
    # the browser signs in first (as the admin would have, in this profile: a form posted into
    # a frame), then the page auto-submits a form to the start route into another frame: the
    # browser sends the Lax cookie along, another port of 127.0.0.1 being the same site
    page = f"""<!doctype html><html><body>
<iframe name="signin" id="signin"></iframe>
<form id="login" method="post" action="{site.url}/ui/login" target="signin">
<input name="token" value="{TOKEN}"><input name="next" value="/ui/sessions"></form>
<iframe name="result"></iframe>
<form id="f" method="post" action="{site.url}/agents/solo/sessions" enctype="text/plain"
      target="result">
<input name='{{"initialPrompt": "from elsewhere", "x": "' value='"}}'></form>
<script>
window.onload = () => {{
  document.getElementById("signin").onload = () => document.getElementById("f").submit();
  document.getElementById("login").submit();
}};
</script></body></html>"""
    attacker = Attacker(page)
    try:
        chromium.visit(attacker.url, milliseconds=10000)
    finally:
        attacker.close()

    def attacked() -> list[Seen]:
        return [s for s in site.seen if (s.method, s.path) == ("POST", "/agents/solo/sessions")]

    wait_for(attacked, timeout=10)
    signed = [s for s in site.seen if (s.method, s.path) == ("POST", "/ui/login")]
    assert [s.status for s in signed] == [303]
    answered = [(s.method, s.path, s.status) for s in site.seen]
    assert ("GET", "/ui/sessions", 200) in answered  # signed in: the cookie works here
    [attack] = attacked()
    assert "hookspawn_session=" in attack.headers.get("cookie", "")  # the browser sent it …
    assert attack.headers.get("sec-fetch-site") == "same-site"
    assert attack.status == 403  # … and it was refused (a bad cookie would be 401)
    assert site.sessions() == []


def test_secure_cookie_behind_a_trusted_proxy_only(redis_url: str, tmp_path: Path) -> None:
    """Served as `hookspawn web` serves (live_listeners: the command's own uvicorn config,
    proxy headers believed from HOOKSPAWN_TRUSTED_PROXIES only)."""
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    form = {"token": ADMIN_TOKEN, "next": "/ui"}

    def web(**settings: Any) -> Runtime:
        return build_runtime(
            make_settings(redis_url=redis_url, admin_token=ADMIN_TOKEN, **settings)
        )

    trusted = web(trusted_proxies=["127.0.0.1"], data_dir=tmp_path / "trusted")
    with (
        closing(trusted),
        live_listeners(trusted) as served,
        loopback.Client(base_url=served.admin) as client,
    ):
        behind = client.post("/ui/login", data=form, headers=forwarded)
        assert behind.status_code == 303
        assert "Secure" in behind.headers["set-cookie"]
        direct = client.post("/ui/login", data=form)
        assert "Secure" not in direct.headers["set-cookie"]
    untrusted = web(data_dir=tmp_path / "untrusted")
    with (
        closing(untrusted),
        live_listeners(untrusted) as served,
        loopback.Client(base_url=served.admin) as client,
    ):
        # 127.0.0.1 is not listed here: its X-Forwarded-Proto is not believed
        spoofed = client.post("/ui/login", data=form, headers=forwarded)
        assert spoofed.status_code == 303
        assert "Secure" not in spoofed.headers["set-cookie"]


def test_a_new_admin_token_ends_earlier_logins(redis_client: redis.Redis) -> None:
    login_id = logins.create(redis_client, "token-before")
    assert logins.valid(redis_client, "token-before", login_id)
    assert not logins.valid(redis_client, "token-after", login_id)
    assert not logins.valid(redis_client, "token-before", login_id + "x")
    assert not logins.valid(redis_client, "token-before", "")
    logins.revoke(redis_client, login_id)
    assert not logins.valid(redis_client, "token-before", login_id)
