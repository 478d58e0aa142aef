"""Agent files are contained like imports: a FIFO, or a symlink leading outside the .auto
directory, is an error for that file (never opened, never followed) while the agents that
compile keep processing deliveries, `GET /agents` keeps answering and `check` names both files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import wait_for
from tests.workers.delivery.pipeline.conftest import Hookspawn

REPO_ROOT = Path(__file__).resolve().parents[4]

#: a value only the file outside the directory holds: it must never show up anywhere
OUTSIDE_VALUE = "outside-value-7c1e94"


def agents(client: httpx.Client) -> tuple[list[str], list[str]]:
    """GET /agents: the compiled agents' names, and the errors of the files."""
    # one second is all it may take: a reload stuck in open() would hold it for ever
    response = client.get("/agents", timeout=1.0)
    assert response.status_code == 200, response.text
    found = response.json()
    return sorted(a["name"] for a in found["items"]), [str(e) for e in found["errors"]]


def test_a_fifo_and_an_outward_symlink_change_nothing_but_errors(
    connected: Hookspawn, tmp_path: Path
) -> None:
    hs = connected
    first = hs.processed(hs.send("pull_request", hs.pr()))
    before = {o["agent"] for o in first["outcomes"] if o["outcome"] == "dispatched"}
    assert before == {"pr-review", "head-branch"}
    names, _ = agents(hs.client)

    # a FIFO alone is seen by the watch (never opened by it) and reported at once
    os.mkfifo(hs.auto / "agents" / "pipe.yaml")
    wait_for(lambda: any("pipe.yaml" in e for e in agents(hs.client)[1]))

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "stolen.yaml").write_text(
        f"name: stolen\nharness: codex\nenvironment: {OUTSIDE_VALUE}\n"
    )
    (hs.auto / "agents" / "stolen.yaml").symlink_to(outside / "stolen.yaml")
    os.mkfifo(hs.auto / "fragments" / "pipe.yaml")
    (hs.auto / "agents" / "importer.yaml").write_text(
        "name: importer\nimports: [../fragments/pipe.yaml]\n"
    )

    wait_for(lambda: len(agents(hs.client)[1]) >= 3)
    listed, errors = agents(hs.client)
    assert listed == names
    assert any(
        e.startswith(".auto/agents/pipe.yaml:1:") and "a FIFO (named pipe), not a regular file" in e
        for e in errors
    ), errors
    assert any(
        e.startswith(".auto/agents/stolen.yaml:1:")
        and "a symlink leading outside the .auto directory: not followed" in e
        for e in errors
    ), errors
    assert any("importer.yaml" in e and "not a regular file" in e for e in errors), errors
    assert not any(OUTSIDE_VALUE in e or "elsewhere" in e for e in errors), errors

    # the agents that compile keep working, delivery after delivery
    for _ in range(2):
        view = hs.processed(hs.send("pull_request", hs.pr()))
        assert view["status"] == "processed", view
        assert {o["agent"] for o in view["outcomes"] if o["outcome"] == "dispatched"} == before
    agents(hs.client)

    # `check` reports each file with what is wrong with it, and opens neither
    checked = subprocess.run(
        [sys.executable, "-m", "hookspawn.cli", "check", str(hs.auto)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode != 0
    out = checked.stdout + checked.stderr
    lines = out.splitlines()
    assert any(
        ".auto/agents/pipe.yaml:1: " in line
        and line.endswith("a FIFO (named pipe), not a regular file: not read")
        for line in lines
    ), out
    assert any(
        ".auto/agents/stolen.yaml:1: " in line
        and line.endswith("a symlink leading outside the .auto directory: not followed, not read")
        for line in lines
    ), out
    assert OUTSIDE_VALUE not in out
