"""Metrics tests run a whole hookspawn (the delivery pipeline's stack) and scrape /metrics."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.workers.delivery.pipeline.conftest import github as github  # the stand-in fixture
from tests.workers.delivery.pipeline.conftest import (
    hs_http as hs_http,  # hookspawn dispatching over HTTP
)
from workers import metrics


@pytest.fixture(autouse=True)
def fresh_recorder() -> Iterator[None]:
    """Start from an empty buffer: other tests in this process may have recorded without a flush."""
    metrics.BUFFER.reset()
    yield
    metrics.BUFFER.reset()


@dataclass(frozen=True)
class Scrape:
    """One /metrics answer, parsed by prometheus_client's own parser."""

    text: str
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]
    names: frozenset[str]

    def value(self, name: str, **labels: str) -> float:
        """The sample's value; 0 when the series is absent (never recorded)."""
        return self.samples.get((name, tuple(sorted(labels.items()))), 0.0)

    def present(self, name: str, **labels: str) -> bool:
        return (name, tuple(sorted(labels.items()))) in self.samples


def scrape(client: httpx.Client, **headers: str) -> Scrape:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    names = set()
    for family in text_string_to_metric_families(response.text):
        names.add(family.name)
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return Scrape(response.text, samples, frozenset(names))
