"""The runner reads a session's stored spec once, as a session spec: a record that is not one
fails the session before anything is staged, naming what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.workers.session.runner.conftest import Origin
from tests.workers.session.runner.test_credentials import edit_spec, local_runner, started_app
from workers.session.runs import SessionRuns


def _no_url(spec: dict[str, Any]) -> None:
    spec["mounts"][0].pop("url")


def _no_duration(spec: dict[str, Any]) -> None:
    spec["environment"]["resource"]["spec"]["setupCache"] = {"ttl": "7w"}


@pytest.mark.parametrize(
    ("edit", "field"),
    [(_no_url, "mounts.0.url"), (_no_duration, "environment.resource.spec.setupCache.ttl")],
    ids=["mount without its url", "environment with a ttl that is no duration"],
)
def test_a_stored_spec_that_is_not_a_session_spec_fails_the_session_naming_the_field(
    redis_url: str,
    shared_dir: Path,
    origin: Origin,
    edit: Callable[[dict[str, Any]], None],
    field: str,
) -> None:
    with started_app(redis_url, shared_dir, origin) as (settings, hs, session_id):
        edit_spec(hs, session_id, edit)
        assert local_runner(settings, hs).run(session_id) == "failed"
        run = SessionRuns(hs.rt.client).get(session_id)
    assert run is not None
    assert run.failure is not None and run.failure.code == "internal_error"
    message = run.failure.message
    assert message.startswith(f"session {session_id}: the stored session is not a session spec")
    assert field in message
    # nothing was staged: the checkout's directory was never made
    assert run.workspace is not None
    assert not (Path(run.workspace) / "workspace" / "widgets").exists()
