"""The Grafana dashboard queries only what a running hookspawn's /metrics exports, and shows
every family it exports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.github_standin import GitHubStandin
from tests.monitoring_files import dashboard, expressions, family_of, selected_metrics
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, start_hookspawn
from tests.workers.metrics.conftest import scrape


@pytest.fixture
def hs(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir)


def test_every_metric_the_dashboard_queries_is_exported(hs: Hookspawn) -> None:
    connect(hs)
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert any(o["outcome"] == "dispatched" for o in view["outcomes"]), view["outcomes"]
    got = scrape(hs.client)
    types = {f.name: f.type for f in text_string_to_metric_families(got.text)}
    sampled = {name for name, _ in got.samples}
    assert "hookspawn_webhook_to_session_seconds_bucket" in sampled  # the delivery was counted

    queried: dict[str, str] = {}
    for expr in expressions(dashboard()):
        names = selected_metrics(expr)
        assert names, f"no metric in {expr!r}"
        for name in names:
            family = family_of(name, types)
            assert family is not None, f"{name!r} (in {expr!r}) is not exported by /metrics"
            queried[name] = family
    # and nothing /metrics exports is left off the dashboard (but prometheus_client's
    # `_created` timestamps of the web's own series, which are no measurement)
    shown = set(queried.values())
    assert sorted(n for n in set(types) - shown if not n.endswith("_created")) == []
