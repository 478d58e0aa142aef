"""The worker's agent set follows the files: edits, new files and deletions are picked up,
a file that does not compile is left out (the others load, on the first look too), the set's
generation is the same wherever the same files are compiled, and one watch serves every
forked pool process."""

from __future__ import annotations

import multiprocessing
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from workers.agents_source import AgentsSource, ChangeWatch

ENVIRONMENT = """\
harness: claude-code
environment:
  name: runtime
  image: {kind: preset, name: node24}
"""


def agent_file(name: str, event: str = "pull_request") -> str:
    return ENVIRONMENT + textwrap.dedent(f"""\
        name: {name}
        triggers:
          - event: {event}
            name: t
        """)


def write(root: Path, name: str, text: str) -> Path:
    path = root / "agents" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def names(source: AgentsSource) -> list[str]:
    return sorted(agent.name for agent in source.current().agents)


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[ChangeWatch]:
    write(tmp_path, "first", agent_file("first"))
    started = ChangeWatch(tmp_path, interval=0.05).start()
    yield started
    started.stop()


def test_without_a_watch_edits_additions_and_deletions_are_picked_up(tmp_path: Path) -> None:
    first = write(tmp_path, "first", agent_file("first"))
    source = AgentsSource(tmp_path, check_interval=0.0)
    assert names(source) == ["first"]
    assert [t.event for t in source.current().agents[0].triggers] == ["pull_request"]

    first.write_text(agent_file("first", event="issues"))
    assert [t.event for t in source.current().agents[0].triggers] == ["issues"]
    write(tmp_path, "second", agent_file("second"))
    assert names(source) == ["first", "second"]
    first.unlink()
    assert names(source) == ["second"]
    assert source.current().index.candidates("pull_request")


def test_without_a_watch_the_files_are_looked_at_once_per_interval(tmp_path: Path) -> None:
    write(tmp_path, "first", agent_file("first"))
    source = AgentsSource(tmp_path, check_interval=3600.0)
    assert names(source) == ["first"]
    write(tmp_path, "second", agent_file("second"))
    assert names(source) == ["first"], "looked at the files again within the interval"


def test_a_broken_edit_leaves_that_file_out_and_says_why(tmp_path: Path) -> None:
    first = write(tmp_path, "first", agent_file("first"))
    write(tmp_path, "second", agent_file("second"))
    source = AgentsSource(tmp_path, check_interval=0.0)
    good = source.current()
    assert names(source) == ["first", "second"] and source.last_errors == ()
    first.write_text(agent_file("first") + "mounts: [{kind: git}]\n")
    broken = source.current()
    assert [a.name for a in broken.agents] == ["second"]
    assert broken.generation != good.generation
    assert source.last_errors and all("first.yaml" in e for e in source.last_errors)
    assert broken.index.candidates("pull_request")

    first.write_text(agent_file("first", event="issues"))
    assert names(source) == ["first", "second"]
    assert [t.event for t in source.current().agents[0].triggers] == ["issues"]
    assert source.last_errors == ()


def test_a_first_look_at_a_directory_with_a_bad_file_loads_the_others(tmp_path: Path) -> None:
    write(tmp_path, "first", agent_file("first"))
    write(tmp_path, "second", agent_file("second"))
    os.mkfifo(tmp_path / "agents" / "pipe.yaml")
    (tmp_path / "agents" / "unreadable.yaml").symlink_to(tmp_path / "nowhere.yaml")
    source = AgentsSource(tmp_path, check_interval=0.0)
    assert names(source) == ["first", "second"]
    errors = source.last_errors
    assert any("pipe.yaml" in e and "FIFO" in e for e in errors), errors
    assert any("unreadable.yaml" in e for e in errors), errors


def test_the_same_files_give_the_same_generation_whatever_was_loaded_before(
    tmp_path: Path,
) -> None:
    first = write(tmp_path, "first", agent_file("first"))
    write(tmp_path, "second", agent_file("second"))
    early = AgentsSource(tmp_path, check_interval=0.0)
    assert names(early) == ["first", "second"]  # this one saw the good set first
    first.write_text("name: first\nharness: nonsense\n")
    late = AgentsSource(tmp_path, check_interval=0.0)
    assert names(early) == names(late) == ["second"]
    assert early.current().generation == late.current().generation
    assert len(late.current().generation) == 16
    first.write_text(agent_file("first", event="issues"))
    edited = early.current().generation
    assert edited == late.current().generation
    first.write_text(agent_file("first", event="push"))
    assert early.current().generation != edited, "a change that matters changes the generation"


def test_with_a_watch_the_source_looks_only_when_the_watch_counted_a_change(
    tmp_path: Path,
) -> None:
    write(tmp_path, "first", agent_file("first"))
    idle = ChangeWatch(tmp_path)  # not started: it never counts
    source = AgentsSource(tmp_path, check_interval=0.0, watch=idle)
    assert names(source) == ["first"]
    write(tmp_path, "second", agent_file("second"))
    assert names(source) == ["first"], "scanned the files although the watch saw nothing"

    running = ChangeWatch(tmp_path, interval=0.05).start()
    try:
        source = AgentsSource(tmp_path, watch=running)
        assert names(source) == ["first", "second"]
        write(tmp_path, "third", agent_file("third"))
        wait_for(lambda: running.changes >= 1, timeout=10)
        assert names(source) == ["first", "second", "third"]
    finally:
        running.stop()


def test_an_edit_in_place_is_seen_by_the_watch(tmp_path: Path, watch: ChangeWatch) -> None:
    path = tmp_path / "agents" / "first.yaml"
    before = watch.changes
    with path.open("a") as handle:  # same name, same directory entry
        handle.write("# edited\n")
    wait_for(lambda: watch.changes > before, timeout=10)


def _count_in_child(watch: ChangeWatch, ready: Any, out: Any) -> None:
    # in the forked child: wait until the parent's watch thread counts a change
    ready.set()
    try:
        wait_for(lambda: watch.changes > 0, 10, 0.01, what="the parent's watch counting")
    finally:  # the parent asserts on what the child saw
        out.put((os.getpid(), watch.changes))


def test_processes_forked_after_the_watch_started_see_its_count(
    tmp_path: Path, watch: ChangeWatch
) -> None:
    context = multiprocessing.get_context("fork")
    ready, out = context.Event(), context.Queue()
    child = context.Process(target=_count_in_child, args=(watch, ready, out))
    child.start()
    try:
        assert ready.wait(10)
        write(tmp_path, "second", agent_file("second"))
        pid, seen = out.get(timeout=15)
    finally:
        child.join(10)
    assert pid != os.getpid()
    assert seen >= 1, "the forked process never saw the parent's watch count the change"


def test_a_pool_process_source_reloads_from_the_shared_watch(
    tmp_path: Path, watch: ChangeWatch
) -> None:
    context = multiprocessing.get_context("fork")
    ready, out = context.Event(), context.Queue()
    child = context.Process(target=_names_after_change, args=(tmp_path, watch, ready, out))
    child.start()
    try:
        assert ready.wait(10)
        write(tmp_path, "second", agent_file("second"))
        seen = out.get(timeout=15)
    finally:
        child.join(10)
    assert seen == ["first", "second"]


def _names_after_change(root: Path, watch: ChangeWatch, ready: Any, out: Any) -> None:
    source = AgentsSource(root, watch=watch)
    first = names(source)
    assert first == ["first"], first
    ready.set()
    try:
        wait_for(lambda: names(source) != first, 10, 0.01, what="the new agent loaded")
    finally:  # the parent asserts on what the child saw
        out.put(names(source))
