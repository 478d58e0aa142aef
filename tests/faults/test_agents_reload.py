"""An agent file added under a running `hookspawn worker` (prefork, two pool processes):
every pool process picks it up from the worker's one watch of the files, without a restart;
and a file that cannot be read, there before any process first loads, leaves every good
agent firing in every process, under the generation `GET /agents` names."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.dispatch_target import DispatchTarget
from tests.faults.conftest import AGENTS, Cluster, FaultStandin
from tests.workers.delivery.pipeline.conftest import write_agents

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


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_fifo_there_before_the_first_delivery_leaves_every_good_agent_firing(
    tmp_path: Path, github: FaultStandin, target: DispatchTarget
) -> None:
    cluster = Cluster(tmp_path, github, target, concurrency=2)
    try:
        cluster.key_path.write_text(github.private_key_pem)
        write_agents(cluster.root, AGENTS)
        # before web, the worker or any of its pool processes has looked at the files
        os.mkfifo(cluster.auto / "agents" / "pipe.yaml")
        cluster.redis.start()
        cluster.start_web()
        cluster.start_worker()
        listed = cluster.http.get("/agents", timeout=5).json()
        assert sorted(a["name"] for a in listed["items"]) == ["builder", "reviewer"]
        assert any("pipe.yaml" in e and "FIFO" in e for e in listed["errors"]), listed
        cluster.spawn_keys = sorted(
            (agent["name"], trigger["key"])
            for agent in listed["items"]
            for trigger in agent["triggers"]
            if trigger["event"] == "pull_request"
        )
        cluster.connect()

        # each delivery takes 0.3 s at the target: a burst keeps both pool processes busy
        cluster.target.delay = 0.3
        with ThreadPoolExecutor(6) as pool:
            burst = list(pool.map(lambda _: cluster.send_pr(), range(6)))
        assert all(a.status == 202 for a in burst)
        views = cluster.settle([a.delivery for a in burst])
        assert all(fired(v) == {"reviewer", "builder"} for v in views.values()), views
        # every delivery names the set that decided it: the one GET /agents shows
        generations = {v["agentsGeneration"] for v in views.values()}
        generations |= {run["agentsGeneration"] for v in views.values() for run in v["runs"]}
        assert generations == {listed["generation"]}
        # both pool processes loaded that set themselves, each reporting the FIFO
        assert cluster.log_lines("worker", "2 agents that compile are loaded") == 2
        assert cluster.log_lines("worker", "pipe.yaml") >= 2
        cluster.audit(views).assert_clean()
    finally:
        cluster.stop()
