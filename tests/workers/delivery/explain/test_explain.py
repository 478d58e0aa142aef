"""POST /explain and `hookspawn explain`: decisions, plans, coverage, no side effects, errors."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import redis

from hookspawn.cli import main
from tests.github_standin import GitHubStandin
from tests.workers.delivery.pipeline.conftest import INSTALLATION, REPO, Hookspawn, start_hookspawn
from workers import metrics


def explain(hs: Hookspawn, event: str, payload: Any, **extra: Any) -> dict[str, Any]:
    response = hs.client.post("/explain", json={"event": event, "payload": payload, **extra})
    assert response.status_code == 200, response.text
    view: dict[str, Any] = response.json()
    return view


def item(view: dict[str, Any], agent: str, trigger: int = 0) -> dict[str, Any]:
    found = [i for i in view["triggers"] if i["agent"] == agent and i["trigger"] == trigger]
    assert len(found) == 1, [(i["agent"], i["trigger"]) for i in view["triggers"]]
    first: dict[str, Any] = found[0]
    return first


def snapshot(url: str) -> dict[bytes, bytes | None]:
    """Every key of the database with its serialized value; kombu's own bookkeeping (`_kombu.*`,
    which the test worker's broadcast binding refreshes on its own clock) is left out."""
    client = redis.Redis.from_url(url)
    try:
        keys = sorted(str(key, "latin-1") for key in client.keys("*"))  # type: ignore[arg-type]
        return {
            key.encode("latin-1"): client.dump(key) for key in keys if not key.startswith("_kombu.")
        }
    finally:
        client.close()


def test_every_trigger_of_every_agent_with_plan_for_those_that_fire(connected: Hookspawn) -> None:
    hs = connected
    view = explain(hs, "pull_request", hs.pr())
    assert (view["event"], view["action"], view["repository"]) == ("pull_request", "opened", REPO)
    # every trigger of every agent, including those listening to other events
    total = sum(len(a["triggers"]) for a in hs.client.get("/agents").json()["items"])
    assert len(view["triggers"]) == total == view["summary"]["triggers"]

    review = item(view, "pr-review")
    assert review["fires"] is True
    plan = review["plan"]
    assert plan["outcome"] == "dispatched"
    assert plan["code"] is None
    assert plan["refs"] == [
        {"mountPath": "/workspace/hello", "repository": REPO, "ref": "refs/pull/2/head"}
    ]
    assert plan["texts"]["displayTitle"] == "Review #2: Update the README with new information."
    [cover] = plan["coverage"]
    assert cover["covered"] is True
    assert cover["installationId"] == INSTALLATION
    assert cover["token"].startswith(
        f"would mint a token for installation {INSTALLATION} with permissions {{"
    )
    assert '"pull_requests": "write"' in cover["token"]
    # the installation.created webhook recorded no `actions` permission; the mount needs read
    assert "actions: read" in cover["warning"]

    refused = item(view, "merged-by")["plan"]
    assert refused["outcome"] == "refused"
    assert refused["code"] == "unresolvable_ref"
    assert "mergedBy" in refused["message"]
    assert "refs" not in refused  # the plan stops where the pipeline would

    other = item(view, "commenter")
    assert other["fires"] is False
    assert other["failed"] == "event"
    assert "issue_comment" in other["detail"]
    assert "plan" not in other
    assert view["summary"]["outcomes"] == {"dispatched": 2, "refused": 1}


def test_first_failed_condition_of_each_kind(connected: Hookspawn) -> None:
    hs = connected
    view = explain(hs, "pull_request", hs.pr())
    drafts = item(view, "drafts", 0)
    assert drafts["failed"] == "filter"
    assert drafts["filter"] == {
        "index": 1,
        "path": "github.pullRequest.draft",
        "op": "equals",
        "expected": True,
        "present": True,
        "actual": False,
    }
    assert item(view, "drafts", 1)["failed"] == "repository"
    assert "acme/*" in item(view, "drafts", 1)["detail"]
    release = item(view, "drafts", 2)
    assert release["failed"] == "branch"
    assert "'master'" in release["detail"]
    assert item(view, "drafts", 3)["failed"] == "action"

    body = hs.pr()
    body["sender"]["type"] = "Bot"
    bots = explain(hs, "pull_request", body)
    assert item(bots, "pr-review")["failed"] == "bots"


def test_not_covered_is_suppressed_and_says_why(hs: Hookspawn) -> None:
    view = explain(hs, "pull_request", hs.pr())
    plan = item(view, "pr-review")["plan"]
    assert plan["outcome"] == "suppressed"
    assert plan["code"] == "repository_not_covered"
    [cover] = plan["coverage"]
    assert cover["covered"] is False
    assert REPO in cover["reason"]
    assert "no installation of the project lists it" in cover["reason"]


def test_no_side_effects(connected: Hookspawn, redis_url: str) -> None:
    hs = connected
    sessions = hs.sessions()
    deliveries = hs.client.get("/deliveries").json()["items"]
    before_github = hs.github.count()
    # the counts of the connecting delivery reach Redis within a second (metrics.FLUSHER):
    # written now, so the comparison sees only what explaining does
    metrics.flush(hs.rt.client)
    before = snapshot(redis_url)
    for name in (
        "pull_request/opened.payload.json",
        "installation/deleted.payload.json",
        "issue_comment/created.payload.json",
        "push/payload.json",
    ):
        path = hs.webhooks / name
        view = explain(hs, name.split("/")[0], json.loads(path.read_text()))
        assert view["triggers"]
    after = snapshot(redis_url)
    assert after.keys() == before.keys()
    assert after == before
    assert hs.github.count() == before_github
    assert hs.sessions() == sessions
    assert hs.client.get("/deliveries").json()["items"] == deliveries


def test_lifecycle_event_is_not_applied(connected: Hookspawn) -> None:
    hs = connected
    body = json.loads((hs.webhooks / "installation/deleted.payload.json").read_text())
    body["installation"]["id"] = INSTALLATION
    view = explain(hs, "installation", body)
    assert any("lifecycle" in note for note in view["notes"])
    [installation] = hs.client.get("/connections").json()["items"]
    assert installation["status"] == "active"


def test_delivery_id_looks_up_earlier_dispatch(connected: Hookspawn) -> None:
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-explained"))
    session = hs.outcome(view, "pr-review")["sessionId"]
    again = explain(hs, "pull_request", hs.pr(), deliveryId="pr-explained")
    plan = item(again, "pr-review")["plan"]
    assert plan["alreadyDispatched"] == session
    assert plan["sessionId"] == session
    fresh = item(explain(hs, "pull_request", hs.pr(), deliveryId="pr-other"), "pr-review")
    assert fresh["plan"]["sessionId"] != session
    assert "alreadyDispatched" not in fresh["plan"]


def test_a_recorded_delivery_is_explained_from_its_stored_event_and_body(
    connected: Hookspawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-recorded"))
    session = hs.outcome(view, "pr-review")["sessionId"]
    answer = hs.client.post("/explain", json={"deliveryId": "pr-recorded"})
    assert answer.status_code == 200, answer.text
    recorded = answer.json()
    assert recorded == explain(hs, "pull_request", hs.pr(), deliveryId="pr-recorded")
    assert item(recorded, "pr-review")["plan"]["alreadyDispatched"] == session

    missing = hs.client.post("/explain", json={"deliveryId": "never-sent"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "delivery_not_found"
    assert "never-sent" in missing.json()["error"]["message"]

    monkeypatch.delenv("HOOKSPAWN_ADMIN_TOKEN", raising=False)
    url = str(hs.client.base_url)
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["explain", "pr-recorded", "--url", url])
    assert code == 0, out.getvalue()
    assert out.getvalue().startswith(f"pull_request opened on {REPO}: ")
    assert "pr-review trigger 0: fires → dispatched" in out.getvalue()
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["explain", "pr-recorded", "--event", "push", "--url", url])
    assert code == 2
    assert "--event and --delivery go with a FILE" in err.getvalue()


def test_real_delivery_keeps_its_decisions(connected: Hookspawn) -> None:
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr()))
    decisions = [d for d in view["decisions"] if "agent" in d]
    # indexed: only the triggers listening to pull_request, each with its decision
    assert {d["agent"] for d in decisions} == {"pr-review", "head-branch", "merged-by", "drafts"}
    by_key = {(d["agent"], d["trigger"]): d for d in decisions}
    assert by_key[("pr-review", 0)]["fires"] is True
    assert by_key[("drafts", 0)]["failed"] == "filter"
    assert "github.pullRequest.draft" in by_key[("drafts", 0)]["detail"]
    # the same decisions as explain gives for those triggers
    explained = explain(hs, "pull_request", hs.pr())
    for key, decision in by_key.items():
        mirror = item(explained, *key)
        assert (mirror["fires"], mirror["failed"]) == (decision["fires"], decision["failed"])


@pytest.mark.parametrize("setup", ["connected", "hs"])
def test_explain_plans_what_the_pipeline_then_does(
    request: pytest.FixtureRequest, setup: str
) -> None:
    """One decision: each fired trigger's plan is the outcome the delivery then records."""
    target: Hookspawn = request.getfixturevalue(setup)
    connect = setup == "connected"
    delivery = f"pr-same-{setup}"
    explained = explain(target, "pull_request", target.pr(), deliveryId=delivery)
    view = target.processed(target.send("pull_request", target.pr(), delivery=delivery))
    planned = {(i["agent"], i["trigger"]): i["plan"] for i in explained["triggers"] if i["fires"]}
    done = {(o["agent"], o["trigger"]): o for o in view["outcomes"]}
    assert planned.keys() == done.keys() and planned
    kinds = set()
    for key, plan in planned.items():
        outcome = done[key]
        kinds.add(plan["outcome"])
        assert (outcome["outcome"], outcome["code"]) == (plan["outcome"], plan["code"]), key
        if plan["outcome"] == "dispatched":
            assert outcome["sessionId"] == plan["sessionId"]
        else:
            assert (outcome["message"], outcome["details"]) == (plan["message"], plan["details"])
    assert kinds == ({"dispatched", "refused"} if connect else {"suppressed"})


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"payload": {}}, 422),
        ({"event": "push"}, 422),
        ({}, 422),
        ({"event": "push", "deliveryId": "d1"}, 422),
        ({"event": "push", "payload": [1, 2]}, 422),
        ({"event": "push", "payload": {}, "extra": 1}, 422),
        ({"event": "Not An Event", "payload": {}}, 400),
        ({"event": "push", "payload": {}, "deliveryId": "a/b"}, 400),
    ],
)
def test_bad_requests_get_the_shared_error_body(
    hs: Hookspawn, body: dict[str, Any], status: int
) -> None:
    response = hs.client.post("/explain", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["message"]


def test_not_json_is_422(hs: Hookspawn) -> None:
    response = hs.client.post(
        "/explain", content=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"


@pytest.fixture
def secured(
    tmp_path: Path, redis_url: str, github: GitHubStandin, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    yield from start_hookspawn(tmp_path, redis_url, github, webhooks_dir, admin_token="s3cret")


def test_admin_token_is_required_when_set(secured: Hookspawn) -> None:
    hs = secured
    body = {"event": "pull_request", "payload": hs.pr()}
    refused = hs.client.post("/explain", json=body)
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    allowed = hs.client.post("/explain", json=body, headers={"Authorization": "Bearer s3cret"})
    assert allowed.status_code == 200
    assert allowed.json()["summary"]["triggers"] > 0


def test_cli_prints_each_trigger(
    connected: Hookspawn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hs = connected
    monkeypatch.delenv("HOOKSPAWN_ADMIN_TOKEN", raising=False)
    payload = tmp_path / "pr.json"
    payload.write_text(json.dumps(hs.pr()))
    url = str(hs.client.base_url)
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["explain", str(payload), "--event", "pull_request", "--url", url])
    assert code == 0, out.getvalue()
    text = out.getvalue()
    assert text.startswith(f"pull_request opened on {REPO}: ")
    assert "pr-review trigger 0: fires → dispatched" in text
    assert "/workspace/hello: ref refs/pull/2/head" in text
    assert "merged-by trigger 0: fires → refused unresolvable_ref" in text
    assert "drafts trigger 0 (drafts-only): no — filter: filter 1" in text
    assert f"would mint a token for installation {INSTALLATION}" in text

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["explain", str(payload), "--event", "pull_request", "--url", url, "--json"])
    assert code == 0
    assert json.loads(out.getvalue())["summary"]["fire"] == 3

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["explain", str(payload), "--event", "Bad!", "--url", url])
    assert code == 1
    assert out.getvalue() == ""
    (line,) = err.getvalue().splitlines()  # an error answer is one line on stderr
    assert line.startswith("hookspawn explain: POST /explain: 400 invalid_request: ")
