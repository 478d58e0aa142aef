"""The session spec's JSON: one document whatever writes its parts, integers of any size kept."""

from __future__ import annotations

import json
from pathlib import Path

from triggers.envelope import build_envelope, load_body, session_input
from workers.session_spec import Origin, SessionEnvironment, SessionSpec


def _spec(input_: dict[str, object] | None) -> SessionSpec:
    return SessionSpec(
        id="s-1",
        agent="pr-review",
        harness="claude",
        environment=SessionEnvironment(name="default", resource={"image": "x"}),
        display_title="Review #2",
        input=input_,
        origin=Origin(kind="trigger", delivery_id="d-1", trigger=0, trigger_key="k"),
        created_at="2026-11-29T00:00:00Z",
    )


def test_spec_bytes_are_the_models_json(webhooks_dir: Path) -> None:
    body = load_body((webhooks_dir / "pull_request/opened.payload.json").read_bytes())
    body["huge"] = 2**70
    body["text"] = 'é \u2028 "quoted" \\ {{ 7*7 }}'
    spec = _spec(session_input("d-1", build_envelope("pull_request", "d-1", body)))
    written = json.loads(spec.to_bytes())
    assert written == json.loads(spec.model_dump_json(by_alias=True))
    assert written["input"]["payload"]["github"]["huge"] == 2**70
    assert written["input"]["payload"]["github"]["pullRequest"]["number"] == 2
    assert set(written) == set(spec.to_json())


def test_spec_without_input() -> None:
    spec = _spec(None)
    written = json.loads(spec.to_bytes())
    assert written["input"] is None
    assert written == spec.to_json()
