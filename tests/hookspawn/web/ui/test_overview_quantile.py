"""The overview's p50/p99 from a histogram's cumulative buckets."""

from __future__ import annotations

from hookspawn.web.ui.overview import quantile

BUCKETS = [(0.1, 2.0), (0.5, 9.0), (1.0, 10.0)]


def test_the_bound_of_the_bucket_that_holds_the_quantile() -> None:
    assert quantile(BUCKETS, 10, 0.2) == 0.1
    assert quantile(BUCKETS, 10, 0.5) == 0.5
    assert quantile(BUCKETS, 10, 0.99) == 1.0


def test_beyond_the_last_bound_is_that_bound() -> None:
    assert quantile(BUCKETS, 20, 0.99) == 1.0  # half the observations were above 1.0


def test_no_observations_no_quantile() -> None:
    assert quantile(BUCKETS, 0, 0.5) is None
    assert quantile([], 3, 0.5) is None
