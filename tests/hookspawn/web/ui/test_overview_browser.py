"""/ui's overview in headless Chromium after real deliveries: the charts show data and the page
breaks none of its Content-Security-Policy (Chromium logs each violation to its console)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.github_standin import GitHubStandin
from tests.hookspawn.web.ui.chromium import Chromium, chromium_path
from tests.hookspawn.web.ui.test_browser import ARTIFACTS, text_of
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, example, start_hookspawn

pytestmark = pytest.mark.slow

VIOLATION = re.compile(r"Content Security Policy|Refused to", re.I)


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


class LoggingChromium(Chromium):
    """Chromium with its console written to stderr, which `console` returns with the DOM."""

    def console(self, url: str) -> tuple[str, str]:
        command = self.command("--enable-logging=stderr", "--v=0", "--dump-dom", url)
        done = subprocess.run(command, capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout, done.stderr


def bar_heights(dom: str, section: str) -> dict[str, float]:
    found = re.search(rf'<section class="card" id="{section}">(.*?)</section>', dom, re.S)
    assert found, f"no section {section} in the DOM"
    heights: dict[str, float] = {}
    for rect in re.findall(r"<rect [^>]*>", found.group(1)):
        label = re.search(r'data-label="([^"]*)"', rect)
        height = re.search(r'height="([0-9.]+)"', rect)
        if label and height:
            heights[label.group(1)] = float(height.group(1))
    return heights


def test_overview_charts_in_chromium(hs: Hookspawn, tmp_path: Path) -> None:
    chromium = LoggingChromium(chromium_path(), tmp_path / "chromium-profile")
    connect(hs)
    pr = hs.send("pull_request", hs.pr())
    hs.processed(pr)
    comment = hs.send("issue_comment", example(hs.webhooks, "issue_comment/created.payload.json"))
    hs.processed(comment)
    base = str(hs.client.base_url).rstrip("/")
    # the worker flushes its metrics (the outcomes) to Redis in the background
    wait_for(lambda: 'data-label="dispatched"' in hs.client.get("/ui").text, timeout=30)

    dom, console = chromium.console(f"{base}/ui")
    assert "<title>Overview" in dom
    assert not VIOLATION.findall(console), console[-2000:]
    shown = text_of(dom)
    assert f"Deliveries, last hour: {len(hs.sent)}" in shown
    assert f"Deliveries, last day: {len(hs.sent)}" in shown
    assert bar_heights(dom, "deliveries-1")["processed"] > 0
    outcomes = bar_heights(dom, "outcomes")
    assert outcomes["dispatched"] > 0
    assert outcomes["refused: unresolvable_ref"] > 0
    assert bar_heights(dom, "sessions")["recorded"] > 0
    assert "<script" not in dom.lower()

    chromium.screenshot(f"{base}/ui", ARTIFACTS / "overview.png")
