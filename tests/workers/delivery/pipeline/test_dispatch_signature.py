"""Dispatch POSTs carry `X-Hookspawn-Signature-256: sha256=<hex HMAC-SHA256 of the body>`
keyed by HOOKSPAWN_DISPATCH_SECRET, which the target verifies; without a secret the header is
absent, and start says so."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import make_settings
from tests.dispatch_target import DispatchTarget, verify_signature
from tests.github_standin import GitHubStandin
from tests.workers.delivery.pipeline.conftest import Hookspawn, connect, start_hookspawn
from workers.runtime import build_runtime

SECRET = "dispatch-secret-for-tests-3f9c"


@pytest.fixture
def signed(
    tmp_path: Path,
    redis_url: str,
    github: GitHubStandin,
    webhooks_dir: Path,
    target: DispatchTarget,
) -> Iterator[Hookspawn]:
    target.secret = SECRET  # the target refuses (401) whatever does not verify
    yield from start_hookspawn(
        tmp_path,
        redis_url,
        github,
        webhooks_dir,
        dispatch_url=target.url,
        dispatch_secret=SECRET,
    )


def test_every_dispatch_post_carries_a_signature_the_target_verifies(
    signed: Hookspawn, target: DispatchTarget
) -> None:
    connect(signed)
    view = signed.processed(signed.send("pull_request", signed.pr()))
    dispatched = [o for o in view["outcomes"] if o["outcome"] == "dispatched"]
    assert {o["agent"] for o in dispatched} == {"pr-review", "head-branch"}
    assert target.unsigned == 0
    assert {r.key for r in target.arrived} == {o["sessionId"] for o in dispatched}
    for received in target.arrived:
        assert received.signature is not None
        assert received.signature.startswith("sha256=")
        assert verify_signature(received.raw, received.signature, SECRET)
        # it covers this body and no other, under this key and no other
        assert not verify_signature(received.raw + b" ", received.signature, SECRET)
        assert not verify_signature(received.raw, received.signature, SECRET + "x")
    assert SECRET not in str([r.body for r in target.arrived])


def test_without_a_secret_the_header_is_absent_and_start_says_so(
    hs_http: Hookspawn, target: DispatchTarget, caplog: pytest.LogCaptureFixture
) -> None:
    connect(hs_http)
    view = hs_http.processed(hs_http.send("pull_request", hs_http.pr()))
    assert hs_http.outcome(view, "pr-review")["outcome"] == "dispatched"
    assert target.arrived
    assert all(r.signature is None for r in target.arrived)

    with caplog.at_level(logging.WARNING, logger="workers.runtime"):
        rt = build_runtime(make_settings(redis_url=hs_http.rt.redis_url, dispatch_url=target.url))
        rt.close()
    warned = [r.getMessage() for r in caplog.records if r.name == "workers.runtime"]
    assert len(warned) == 1
    assert "HOOKSPAWN_DISPATCH_SECRET is not set" in warned[0]
    assert target.url in warned[0]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workers.runtime"):
        rt = build_runtime(
            make_settings(
                redis_url=hs_http.rt.redis_url, dispatch_url=target.url, dispatch_secret=SECRET
            )
        )
        rt.close()
    assert not [r for r in caplog.records if r.name == "workers.runtime"]
