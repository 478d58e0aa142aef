"""An agent file added under a running `hookspawn worker` (prefork, two pool processes):
every pool process picks it up from the worker's one watch of the files, without a restart."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import wait_for
from tests.faults.conftest import Cluster

LINTER = """\
name: linter
imports: [../fragments/environments/runtime.yaml]
triggers:
  - event: pull_request
    actions: [opened]
    name: lint
    displayTitle: "Lint #{{ github.pullRequest.number }}"
"""


def fired(view: dict[str, object]) -> set[str]:
    outcomes = view["outcomes"]
    assert isinstance(outcomes, list)
    return {o["agent"] for o in outcomes if o["outcome"] == "dispatched"}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_an_agent_added_while_the_worker_runs_fires_in_every_pool_process(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(concurrency=2)
    before = cluster.send_pr()
    assert before.status == 202
    assert fired(cluster.settle([before.delivery])[before.delivery]) == {"reviewer", "builder"}
    loads = cluster.log_lines("worker", "loaded 3 agent(s)")
    assert loads == 0

    # one atomic step (write aside, rename in), so the watch counts exactly one change
    staged = cluster.auto / "agents" / ".linter.yaml.tmp"
    staged.write_text(textwrap.dedent(LINTER))
    os.replace(staged, cluster.auto / "agents" / "linter.yaml")

    def linter_fires() -> bool:
        probe = cluster.send_pr()
        return "linter" in fired(cluster.settle([probe.delivery])[probe.delivery])

    wait_for(linter_fires, 30, 0.2, what="the new agent firing")

    # each delivery now takes 0.3 s at the target: a burst keeps both pool processes busy
    cluster.target.delay = 0.3
    with ThreadPoolExecutor(6) as pool:
        burst = list(pool.map(lambda _: cluster.send_pr(), range(6)))
    assert all(a.status == 202 for a in burst)
    views = cluster.settle([a.delivery for a in burst])
    assert all(fired(v) == {"reviewer", "builder", "linter"} for v in views.values()), views
    # each pool process compiled the new set once: it read the watch's count, not the files
    assert cluster.log_lines("worker", "loaded 3 agent(s)") == 2, cluster.worker
