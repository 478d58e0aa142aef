"""GitHub failing with 500s, timeouts and rate limits: retries wait as told, nothing is pruned."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.faults.conftest import Cluster, FaultStandin, Seen
from tests.workers.delivery.pipeline.conftest import INSTALLATION, OTHER_REPO, REPO


def earliest_retry(answer: Seen) -> float | None:
    """When GitHub allowed the next try after a rate-limited answer (wall clock)."""
    if "retry-after" in answer.headers:
        return answer.at + float(answer.headers["retry-after"])
    if answer.headers.get("x-ratelimit-remaining") == "0":
        return float(answer.headers["x-ratelimit-reset"])
    return None


def early_retries(github: FaultStandin) -> tuple[int, list[str]]:
    """Retries of a rate-limited mint that came before GitHub allowed; (limits seen, early).

    Only meaningful while one delivery is in flight: then the next mint asking for the same
    permissions is the retry of the same spawn.
    """
    mints = github.mints()
    limited = 0
    early: list[str] = []
    for n, answer in enumerate(mints):
        allowed = earliest_retry(answer) if answer.status in (403, 429) else None
        if allowed is None:
            continue
        limited += 1
        retry = next((m for m in mints[n + 1 :] if m.permissions == answer.permissions), None)
        assert retry is not None, f"the rate-limited mint {answer.permissions} was never retried"
        if retry.at < allowed:
            early.append(
                f"{answer.permissions}: retried {retry.at - answer.at:.2f}s after a "
                f"{answer.status} that allowed a retry after {allowed - answer.at:.2f}s"
            )
    return limited, early


def connections_intact(cluster: Cluster) -> None:
    items = cluster.http.get("/connections").json()["items"]
    assert len(items) == 1, items
    installation = items[0]
    assert installation["id"] == INSTALLATION, installation
    assert installation["status"] == "active", f"the outage changed the connection: {installation}"
    names = sorted(r["fullName"] for r in installation["repositories"])
    assert names == sorted([REPO, OTHER_REPO]), f"repositories pruned by the outage: {names}"
    assert not installation["pruned"], f"the outage pruned: {installation['pruned']}"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_github_outage_is_retried_as_told_prunes_nothing_and_the_spawns_complete(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(lease=3.0, max_retries=8)
    github = cluster.github
    started = time.monotonic()

    # one delivery at a time: every rate-limited mint's retry must wait as GitHub said
    github.fail_next("access_tokens", "secondary_rate_limit", retry_after=3)
    cluster.settle([cluster.send_pr().delivery])
    github.fail_next("access_tokens", "primary_rate_limit", status=429, reset_in=3)
    cluster.settle([cluster.send_pr().delivery])
    limited, early = early_retries(github)
    assert limited == 2, f"expected two rate-limited mints, saw {limited}"
    assert not early, "retries ignored GitHub's wait:\n  " + "\n  ".join(early)

    # then GitHub is in trouble for a while, under a burst of deliveries
    failures_before = sum(1 for m in github.mints() if m.status >= 400)
    github.fail_next("access_tokens", "server_error", times=4)
    github.fail_next("access_tokens", "timeout", delay=11)  # githubkit gives up after 10s
    github.fail_next("access_tokens", "secondary_rate_limit", times=2, retry_after=2)
    github.fail_next("access_tokens", "server_error", times=2, status=502)
    burst = [cluster.send_pr() for _ in range(8)]
    assert all(a.status == 202 for a in burst), [a.status for a in burst]
    views = cluster.settle()
    cluster.audit(views).assert_clean()  # every spawn dispatched, none failed or refused
    failed_mints = sum(1 for m in github.mints() if m.status >= 400) - failures_before
    assert failed_mints == 8, f"the outage answered {failed_mints} mints with errors, not 8"
    timed_out = [m for m in github.mints() if m.took >= 10]
    assert len(timed_out) == 1, f"expected one mint to time out, saw {len(timed_out)}"
    refused = [o for v in views.values() for o in v["outcomes"] if o["outcome"] != "dispatched"]
    assert not refused, refused
    connections_intact(cluster)
    retries = cluster.log_lines("worker", "; retry in ")
    assert retries >= 5, f"only {retries} task retries for 9 failed mints"
    scanned = cluster.assert_no_secrets()
    print(
        f"\ngithub outage: {limited} rate limits honoured one-at-a-time, then "
        f"{failed_mints + 1} failed mints (500, 502, timeout, 403 retry-after) under a burst "
        f"of {len(burst)}; {len(github.mints())} mints in all, {retries} task retries; "
        f"{len(views)} deliveries processed, nothing pruned, duplicates 0, "
        f"{time.monotonic() - started:.0f}s; secret scan {scanned}"
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_retry_after_holds_when_another_spawn_of_the_delivery_fails_differently(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(lease=3.0, max_retries=8)
    github = cluster.github
    # the first spawn's mint is rate limited for 4s, the second one's meets a plain 500
    github.fail_next("access_tokens", "secondary_rate_limit", retry_after=4)
    github.fail_next("access_tokens", "server_error")
    cluster.settle([cluster.send_pr().delivery])
    cluster.audit().assert_clean()
    limited, early = early_retries(github)
    assert limited == 1
    assert not early, "retries ignored GitHub's wait:\n  " + "\n  ".join(early)
