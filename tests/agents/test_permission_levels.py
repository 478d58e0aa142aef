"""GitHub's permission levels have one order (agents.github_tools), used by the tool gate and
by explain's warning about an installation that grants less than a mount needs."""

from __future__ import annotations

import workers.delivery.explain
from agents.github_tools import LEVEL_RANK, TOOLS, grants, level_covers
from agents.model import Capabilities


def test_the_levels_are_ordered_and_each_includes_the_ones_before() -> None:
    assert sorted(LEVEL_RANK, key=LEVEL_RANK.__getitem__) == ["none", "read", "write", "admin"]
    assert level_covers("admin", "write") and level_covers("write", "read")
    assert not level_covers("read", "write") and not level_covers("none", "read")
    assert level_covers("read", "none") and not level_covers("bogus", "read")


def test_the_gate_and_explain_read_the_same_order() -> None:
    assert grants(Capabilities(contents="write"), TOOLS["get_file_contents"])
    assert not grants(Capabilities(contents="read"), TOOLS["create_or_update_file"])
    assert not hasattr(workers.delivery.explain, "_LEVELS")
    assert vars(workers.delivery.explain)["level_covers"] is level_covers
