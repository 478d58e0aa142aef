"""The explorer in headless Chromium (Debian's `chromium`) after real deliveries; screenshots kept.

Chromium loads the live server's pages itself, so the DOM it dumps is what a browser shows.
Screenshots go to test-artifacts/ui/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.github_standin import GitHubStandin
from tests.hookspawn.web.ui.chromium import Browser, Chromium, chromium_path
from tests.suite_marks import marks_tests
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, example, start_hookspawn

ARTIFACTS = Path(__file__).resolve().parents[4] / "test-artifacts" / "ui"
HOSTILE_TITLE = '<script>document.title="pwned"</script>Fix <b>everything</b>'
TOKEN = "browser-admin-token"


@pytest.fixture
@marks_tests("slow", needs=("chromium",))
def chromium(tmp_path: Path) -> Iterator[Browser]:
    """One Chromium for every page the test reads (tests/hookspawn/web/ui/chromium.py)."""
    with Browser(Chromium(chromium_path(), tmp_path / "profile"), tmp_path / "chromium.log") as b:
        yield b


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


def text_of(dom: str) -> str:
    """The DOM's text with tags dropped (what the page reads as), whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", dom).split())


def test_explorer_in_chromium(hs: Hookspawn, chromium: Browser) -> None:
    connect(hs)
    pr = hs.send("pull_request", hs.pr(title=HOSTILE_TITLE))
    view = hs.processed(pr)
    comment = hs.send("issue_comment", example(hs.webhooks, "issue_comment/created.payload.json"))
    hs.processed(comment)
    assert hs.client.post("/agents/nightly/sessions").status_code == 201
    base = str(hs.client.base_url).rstrip("/")

    listing = chromium.dom(f"{base}/ui/deliveries")
    shown = text_of(listing)
    for delivery in hs.sent:
        assert delivery in shown
    assert "refused: unresolvable_ref" in shown
    assert "dispatched" in shown
    assert "issue_comment" in shown

    detail_dom = chromium.dom(f"{base}/ui/deliveries/{pr}")
    detail = text_of(detail_dom)
    assert pr in detail
    for outcome in view["outcomes"]:
        assert outcome["agent"] in detail
    assert "Decision log" in detail
    # the hostile title is text in the payload view, never an element
    assert "&lt;script&gt;document.title" in detail_dom
    assert "<script" not in detail_dom.lower()
    assert "<b>everything</b>" not in detail_dom

    review = hs.outcome(view, "pr-review")
    session_dom = chromium.dom(f"{base}/ui/sessions/{review['sessionId']}")
    assert "<title>Session" in session_dom  # not "pwned": nothing ran
    assert "Fix &lt;b&gt;everything&lt;/b&gt;" in session_dom

    agents = text_of(chromium.dom(f"{base}/ui/agents"))
    for name in ("pr-review", "head-branch", "merged-by", "commenter", "nightly", "elsewhere"):
        assert name in agents
    assert "event-dependent" in agents
    connections = text_of(chromium.dom(f"{base}/ui/connections"))
    assert "Codertocat/Hello-World" in connections

    chromium.screenshot(f"{base}/ui/deliveries", ARTIFACTS / "deliveries.png")
    chromium.screenshot(f"{base}/ui/deliveries/{pr}", ARTIFACTS / "delivery.png")
    chromium.screenshot(f"{base}/ui/agents", ARTIFACTS / "agents.png")
    chromium.screenshot(f"{base}/ui/connections", ARTIFACTS / "connections.png")
    chromium.screenshot(f"{base}/ui/sessions/{review['sessionId']}", ARTIFACTS / "session.png")


@pytest.fixture
def hs_token(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir, admin_token=TOKEN)


def test_chromium_without_the_cookie_lands_on_sign_in(
    hs_token: Hookspawn, chromium: Browser
) -> None:
    base = str(hs_token.client.base_url).rstrip("/")
    dom = chromium.dom(f"{base}/ui/agents")
    shown = text_of(dom)
    assert "Sign in" in shown
    assert 'name="token"' in dom
    assert 'value="/ui/agents"' in dom  # back to the page asked for, once signed in
    assert "pr-review" not in shown
    chromium.screenshot(f"{base}/ui/agents", ARTIFACTS / "sign-in.png")
