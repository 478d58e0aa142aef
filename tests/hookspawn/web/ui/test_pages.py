"""The explorer pages over real HTTP after real deliveries: content, filters, escaping, sign-in."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.github_standin import GitHubStandin
from tests.workers.delivery.pipeline.conftest import (
    OTHER_REPO,
    REPO,
    Hookspawn,
    connect,
    example,
    start_hookspawn,
)

HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
TOKEN = "ui-admin-token"


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


@pytest.fixture
def hs_token(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir, admin_token=TOKEN)


def page(client: httpx.Client, path: str, **params: str) -> str:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "script-src" not in response.headers["content-security-policy"]  # none at all
    assert "default-src 'none'" in response.headers["content-security-policy"]
    return response.text


def test_deliveries_list_shows_outcomes_and_filters(hs: Hookspawn) -> None:
    connect(hs)
    pr = hs.send("pull_request", hs.pr())
    view = hs.processed(pr)
    comment = example(hs.webhooks, "issue_comment/created.payload.json")
    comment_id = hs.send("issue_comment", comment)
    hs.processed(comment_id)

    text = page(hs.client, "/ui/deliveries")
    for delivery in hs.sent:
        assert delivery in text
    assert "unresolvable_ref" in text  # merged-by: the opened PR has no mergedBy
    assert "dispatched" in text
    assert view["repository"] in text
    # the words `deliveries list` prints, one per kind of outcome
    words = re.findall(r'<span class="badge ([\w-]+)">([^<]*)</span>', text)
    assert words == [
        ("dispatched", "dispatched 2"),  # the comment
        ("refused", "refused: unresolvable_ref"),  # the pull request: what failed first
        ("dispatched", "dispatched 2"),
        ("no-match", "no match"),  # the installation event that connected the repository
    ]

    only_comments = page(hs.client, "/ui/deliveries", event="issue_comment")
    assert comment_id in only_comments
    assert pr not in only_comments
    none_failed = page(hs.client, "/ui/deliveries", status="failed")
    assert pr not in none_failed
    assert "No deliveries match these filters" in none_failed
    limited = page(hs.client, "/ui/deliveries", limit="1")
    assert sum(d in limited for d in hs.sent) == 1
    assert page(hs.client, "/ui/deliveries", limit="nonsense")  # a bad limit falls back, no error


def test_delivery_page_has_decisions_outcomes_and_session_links(hs: Hookspawn) -> None:
    connect(hs)
    pr = hs.send("pull_request", hs.pr())
    view = hs.processed(pr)
    text = page(hs.client, f"/ui/deliveries/{pr}")
    assert pr in text
    assert "Decision log" in text
    # what it came to, in the list's words
    shown = '<dt>Outcome</dt><dd><span class="badge refused">refused: unresolvable_ref</span> '
    assert shown in text
    # every decision is listed, with the failing condition of those that did not fire
    for decision in view["decisions"]:
        if "agent" in decision:
            assert html.escape(decision["agent"]) in text
            if decision.get("detail"):
                assert html.escape(decision["detail"], quote=False) in text
    dispatched = hs.outcome(view, "pr-review")
    assert dispatched["outcome"] == "dispatched"
    assert f'href="/ui/sessions/{dispatched["sessionId"]}"' in text
    refused = hs.outcome(view, "merged-by")
    assert refused["code"] == "unresolvable_ref"
    assert "refused: unresolvable_ref" in text

    session = page(hs.client, f"/ui/sessions/{dispatched['sessionId']}")
    assert "refs/pull/2/head" in session
    assert f'href="/ui/deliveries/{pr}"' in session
    assert "pr-review" in session
    sessions = page(hs.client, "/ui/sessions", agent="pr-review")
    assert dispatched["sessionId"] in sessions


def test_hostile_payload_strings_render_as_text(hs: Hookspawn) -> None:
    connect(hs)
    delivery = hs.send("pull_request", hs.pr(title=HOSTILE))
    view = hs.processed(delivery)
    elsewhere = hs.pr()
    elsewhere["repository"]["full_name"] = "Codertocat/<b>bold</b>"
    hs.processed(hs.send("pull_request", elsewhere))
    listing = page(hs.client, "/ui/deliveries")
    detail = page(hs.client, f"/ui/deliveries/{delivery}")
    escaped_repo = "Codertocat/&lt;b&gt;bold&lt;/b&gt;"
    assert escaped_repo in listing
    assert "<b>bold</b>" not in listing
    assert "&lt;script&gt;alert(" in detail  # the payload is shown, as text
    review = hs.outcome(view, "pr-review")  # its displayTitle carries the PR title
    assert review["outcome"] == "dispatched", review
    session = page(hs.client, f"/ui/sessions/{review['sessionId']}")
    for text in (listing, detail, session):
        assert "<script" not in text.lower()
        assert "<img" not in text.lower()
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in session  # the displayTitle


def test_agents_and_connections_pages(hs: Hookspawn) -> None:
    connect(hs)
    # GitHub says the repository is no longer accessible: it is pruned from the grant
    hs.github.fail_next("access_tokens", "repository_inaccessible")
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert any(o["code"] == "repository_access_revoked" for o in view["outcomes"])

    agents = page(hs.client, "/ui/agents")
    for name in ("pr-review", "head-branch", "commenter", "nightly", "elsewhere"):
        assert f'id="agent-{name}"' in agents
    assert "event-dependent" in agents
    assert "refs/pull/{{payload.github.pullRequest.number}}/head" in agents
    assert "issue_comment" in agents

    connections = page(hs.client, "/ui/connections")
    assert "Installation 957387" in connections
    assert OTHER_REPO in connections
    pruned = connections.split("Pruned (")[1]
    assert REPO in pruned


def test_unknown_things_are_404_pages(hs: Hookspawn) -> None:
    for path in ("/ui/deliveries/nope", "/ui/sessions/nope"):
        response = hs.client.get(path)
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("text/html")
        assert "nope" in response.text


def test_sign_in_sets_the_session_cookie(hs_token: Hookspawn) -> None:
    client = hs_token.client
    hs_token.client.headers.pop("authorization", None)
    away = client.get("/ui/agents", params={"x": "1"})
    assert away.status_code == 303
    target = urlsplit(away.headers["location"])
    assert target.path == "/ui/login"
    assert parse_qs(target.query)["next"] == ["/ui/agents?x=1"]
    form = page(client, "/ui/login", next="/ui/agents?x=1")
    assert 'name="token"' in form
    assert 'value="/ui/agents?x=1"' in form

    wrong = client.post("/ui/login", data={"token": "guess", "next": "/ui/agents"})
    assert wrong.status_code == 401
    assert "not the admin token" in wrong.text
    assert "hookspawn_session" not in wrong.headers.get("set-cookie", "")
    assert client.get("/deliveries").status_code == 401

    right = client.post("/ui/login", data={"token": TOKEN, "next": "/ui/agents?x=1"})
    assert right.status_code == 303
    assert right.headers["location"] == "/ui/agents?x=1"
    cookie = right.headers["set-cookie"]
    assert f"hookspawn_session={client.cookies['hookspawn_session']}" in cookie
    assert "HttpOnly" in cookie
    assert "Secure" not in cookie  # plain http, no trusted proxy
    assert "SameSite=lax" in cookie or "SameSite=Lax" in cookie
    assert "nightly" in page(client, "/ui/agents")  # the client keeps the cookie
    assert client.get("/deliveries").status_code == 200  # the API takes the cookie too

    out = client.post("/ui/logout")
    assert out.status_code == 303
    assert client.get("/ui").status_code == 303


def test_sign_in_never_sends_you_elsewhere(hs_token: Hookspawn) -> None:
    for hostile in ("//evil.example/ui", "https://evil.example", "/\\evil.example", "/uix"):
        answer = hs_token.client.post("/ui/login", data={"token": TOKEN, "next": hostile})
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui", hostile


def test_bearer_token_works_for_the_pages(hs_token: Hookspawn) -> None:
    response = hs_token.client.get("/ui", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert "Deliveries" in response.text


def test_without_a_token_sign_in_is_not_asked(hs: Hookspawn) -> None:
    answer = hs.client.get("/ui/login", params={"next": "/ui/agents"})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/agents"
    assert "Sign out" not in page(hs.client, "/ui/deliveries")
