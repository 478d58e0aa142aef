"""The spawn pipeline end to end: deliveries in, one outcome per fired trigger, sessions out."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.workers.delivery.pipeline.conftest import (
    INSTALLATION,
    OTHER_REPO,
    OTHER_REPO_ID,
    REPO,
    REPO_ID,
    Hookspawn,
)
from workers import keys, metrics


def sessions_timed(hs: Hookspawn) -> float:
    """How many webhook → session latencies /metrics has counted (this process's buffer
    flushed to the store first)."""
    metrics.flush(hs.rt.client)
    text = hs.client.get("/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "hookspawn_webhook_to_session_seconds_count":
                return float(sample.value)
    return 0.0


def test_pr_opened_spawns_one_session_with_rendered_ref_and_title(connected: Hookspawn) -> None:
    hs = connected
    delivery = hs.send("pull_request", hs.pr(), delivery="pr-1")
    view = hs.processed(delivery)
    assert view["status"] == "processed"
    outcome = hs.outcome(view, "pr-review")
    assert outcome["outcome"] == "dispatched", outcome
    assert outcome["code"] is None
    session = hs.client.get(f"/sessions/{outcome['sessionId']}").json()
    assert session["agent"] == "pr-review"
    assert session["mounts"][0]["ref"] == "refs/pull/2/head"
    assert session["mounts"][0]["repository"] == REPO
    assert session["mounts"][0]["installationId"] == INSTALLATION
    assert session["displayTitle"] == "Review #2: Update the README with new information."
    assert session["initialPrompt"] == "Review https://github.com/Codertocat/Hello-World/pull/2"
    assert session["input"]["triggerEventId"] == "pr-1"
    assert session["input"]["payload"]["github"]["pullRequest"]["number"] == 2
    assert session["origin"] == {
        "kind": "trigger",
        "deliveryId": "pr-1",
        "parentSessionId": None,
        "depth": 0,
        "trigger": 0,
        "triggerKey": session["origin"]["triggerKey"],
    }
    assert session["requester"] == {"login": "Codertocat", "id": 21031067}
    assert session["mounts"][0]["url"] == f"https://github.com/{REPO}.git"
    assert session["mounts"][0]["gitPermissions"] == {"contents": "read", "metadata": "read"}
    assert session["workingDirectory"] == "/workspace/hello"
    assert "token" not in str(session).lower().replace("triggerkey", "")

    # the same delivery again: a duplicate, nothing new
    hs.send("pull_request", hs.pr(), delivery="pr-1")
    # a replay runs the pipeline again: still one session
    assert hs.client.post("/deliveries/pr-1/replay").status_code == 202
    replayed = hs.processed("pr-1", runs=2)
    assert len(replayed["runs"]) == 2
    assert hs.outcome(replayed, "pr-review")["sessionId"] == outcome["sessionId"]
    assert len(hs.sessions("pr-review")) == 1


def test_a_delivery_recorded_again_after_expiry_keeps_its_one_session(
    connected: Hookspawn,
) -> None:
    """GitHub redelivering an id whose record has expired: a new record, claimed for the first
    time, yet its spawn ids are the old ones, and their sessions are not created twice."""
    hs = connected
    first = hs.outcome(
        hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-old")), "pr-review"
    )
    assert first["outcome"] == "dispatched" and "created" in first["message"]
    store = hs.rt.client
    store.delete(keys.delivery("pr-old"))
    store.zrem(keys.DELIVERIES, "pr-old")
    again = hs.outcome(
        hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-old")), "pr-review"
    )
    assert again["outcome"] == "dispatched"
    assert again["sessionId"] == first["sessionId"]
    assert "already existed" in again["message"]
    assert len(hs.sessions("pr-review")) == 1
    # the new record counts its claims from one again
    assert hs.rt.client.hget(keys.delivery("pr-old"), "claims") == b"1"


def test_when_one_session_of_a_delivery_exists_the_others_are_created_and_timed(
    connected: Hookspawn,
) -> None:
    """Recorded again after expiry, with one of its two sessions gone meanwhile: the run
    cannot go in one step with its sessions, so they are created one by one; the one
    created is counted in the webhook → session latency, the one that existed is not."""
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-twice"))
    ids = {agent: hs.outcome(view, agent)["sessionId"] for agent in ("pr-review", "head-branch")}
    store = hs.rt.client
    store.delete(keys.delivery("pr-twice"), keys.session(ids["head-branch"]))
    store.zrem(keys.DELIVERIES, "pr-twice")
    before = sessions_timed(hs)

    again = hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-twice"))
    messages = {agent: hs.outcome(again, agent)["message"] for agent in ids}
    assert messages == {
        "pr-review": f"session {ids['pr-review']} already existed",
        "head-branch": f"session {ids['head-branch']} created",
    }
    assert sessions_timed(hs) - before == 1


def test_a_replay_creates_what_is_gone_without_timing_it(connected: Hookspawn) -> None:
    """The webhook → session latency counts first runs only: a session a replay creates
    waited on whoever replayed it, not on hookspawn."""
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr(), delivery="pr-replayed"))
    gone = hs.outcome(view, "head-branch")["sessionId"]
    hs.rt.client.delete(keys.session(gone))
    before = sessions_timed(hs)

    assert hs.client.post("/deliveries/pr-replayed/replay").status_code == 202
    again = hs.processed("pr-replayed", runs=2)
    assert hs.outcome(again, "head-branch")["message"] == f"session {gone} created"
    assert sessions_timed(hs) == before


def test_missing_or_null_ref_token_refuses_only_that_agent(connected: Hookspawn) -> None:
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr()))
    refused = hs.outcome(view, "merged-by")
    assert refused["outcome"] == "refused"
    assert refused["code"] == "unresolvable_ref"
    assert "{{payload.github.pullRequest.mergedBy.login}}" in refused["message"]
    assert refused["details"]["segment"] in ("mergedBy", "login")
    assert "/workspace/hello" in refused["message"]
    assert hs.outcome(view, "pr-review")["outcome"] == "dispatched"
    assert hs.outcome(view, "head-branch")["outcome"] == "dispatched"


def test_unsafe_head_branch_is_invalid_ref(connected: Hookspawn) -> None:
    hs = connected
    for branch in ("--upload-pack=x", "a..b", "x.lock", "a@{1}"):
        body = hs.pr()
        body["pull_request"]["head"]["ref"] = branch
        view = hs.processed(hs.send("pull_request", body))
        outcome = hs.outcome(view, "head-branch")
        assert outcome["outcome"] == "refused", branch
        assert outcome["code"] == "invalid_ref", branch
    assert hs.sessions("head-branch") == []


def test_payload_text_is_never_rendered_twice(connected: Hookspawn) -> None:
    hs = connected
    view = hs.processed(hs.send("pull_request", hs.pr(title="{{ 7*7 }} {% if x %}")))
    session = hs.client.get(f"/sessions/{hs.outcome(view, 'pr-review')['sessionId']}").json()
    assert session["displayTitle"] == "Review #2: {{ 7*7 }} {% if x %}"


def _repos_event(hs: Hookspawn, action: str, repo_id: int, name: str) -> None:
    def mutate(body: dict[str, Any]) -> None:
        body["installation"]["id"] = INSTALLATION
        body["installation"]["account"]["login"] = "Codertocat"
        entry = {
            "id": repo_id,
            "name": name.split("/")[1],
            "full_name": name,
            "private": False,
            "node_id": "n",
        }
        body["repositories_added"] = [entry] if action == "added" else []
        body["repositories_removed"] = [entry] if action == "removed" else []

    hs.lifecycle(f"installation_repositories/{action}.payload.json", mutate)


def test_removed_repository_suppresses_and_added_restores(connected: Hookspawn) -> None:
    hs = connected
    _repos_event(hs, "removed", REPO_ID, REPO)
    before = hs.github.count()
    view = hs.processed(hs.send("pull_request", hs.pr()))
    outcome = hs.outcome(view, "pr-review")
    assert outcome["outcome"] == "suppressed"
    assert outcome["code"] == "repository_not_covered"
    assert REPO in outcome["message"]
    assert hs.github.count() == before  # no GitHub call for a suppressed spawn
    _repos_event(hs, "added", REPO_ID, REPO)
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.outcome(view, "pr-review")["outcome"] == "dispatched"


def _installation(hs: Hookspawn, action: str) -> None:
    def mutate(body: dict[str, Any]) -> None:
        body["installation"]["id"] = INSTALLATION
        body["installation"]["account"]["login"] = "Codertocat"

    hs.lifecycle(f"installation/{action}.payload.json", mutate)


def test_suspend_and_unsuspend(connected: Hookspawn) -> None:
    hs = connected
    _installation(hs, "suspend")
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.outcome(view, "pr-review")["outcome"] == "suppressed"
    _installation(hs, "unsuspend")
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.outcome(view, "pr-review")["outcome"] == "dispatched"


def test_deleted_installation_suppresses(connected: Hookspawn) -> None:
    hs = connected
    _installation(hs, "deleted")
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.outcome(view, "pr-review")["code"] == "repository_not_covered"


def test_rename_changes_name_not_identity(connected: Hookspawn) -> None:
    hs = connected

    def mutate(body: dict[str, Any]) -> None:
        body["installation"] = {"id": INSTALLATION, "node_id": "x"}
        body["repository"]["id"] = OTHER_REPO_ID
        body["repository"]["name"] = "Galaxy"
        body["repository"]["full_name"] = "Codertocat/Galaxy"
        body["repository"]["owner"]["login"] = "Codertocat"
        body["changes"] = {"repository": {"name": {"from": "Space"}}}

    hs.lifecycle("repository/renamed.payload.json", mutate)
    # an agent naming the old name is refused on a manual start
    (hs.auto / "agents/space.yaml").write_text(
        "name: space\nimports: [../fragments/environments/runtime.yaml]\n"
        f"mounts: [{{kind: git, repository: {OTHER_REPO}, mountPath: /w, ref: main,"
        " auth: {kind: githubApp}}]\n"
        "triggers: [{event: push}]\n"
        "---\n"
        if False
        else "name: space\nimports: [../fragments/environments/runtime.yaml]\n"
        f"mounts: [{{kind: git, repository: {OTHER_REPO}, mountPath: /w, ref: main,"
        " auth: {kind: githubApp}}]\n"
    )
    (hs.auto / "agents/galaxy.yaml").write_text(
        "name: galaxy\nimports: [../fragments/environments/runtime.yaml]\n"
        "mounts: [{kind: git, repository: Codertocat/Galaxy, mountPath: /w, ref: main,"
        " auth: {kind: githubApp}}]\n"
        "triggers: [{event: push, branches: [main]}]\n"
    )
    old = _wait_agent(hs, "space", lambda: hs.client.post("/agents/space/sessions"))
    assert old.status_code == 403
    assert old.json()["error"]["code"] == "unauthorized_repository"
    push = {
        "ref": "refs/heads/main",
        "repository": {"id": OTHER_REPO_ID, "full_name": "Codertocat/Galaxy", "name": "Galaxy"},
        "sender": {"login": "Codertocat", "type": "User"},
        "installation": {"id": INSTALLATION},
    }
    view = hs.processed(hs.send("push", push))
    assert hs.outcome(view, "galaxy")["outcome"] == "dispatched"


def _wait_agent(hs: Hookspawn, name: str, call: Any) -> Any:
    from tests.conftest import wait_for

    box: dict[str, Any] = {}

    def loaded() -> bool:
        response = call()
        box["r"] = response
        return bool(response.status_code != 404)

    wait_for(loaded, timeout=10)
    return box["r"]


def test_bot_sender_fires_only_opted_in_triggers(connected: Hookspawn) -> None:
    hs = connected
    from tests.workers.delivery.pipeline.conftest import example

    body = example(hs.webhooks, "issue_comment/created.payload.json")
    body["sender"]["type"] = "Bot"
    body["sender"]["login"] = "hookspawn[bot]"
    view = hs.processed(hs.send("issue_comment", body))
    agents = {o["agent"] for o in view["outcomes"]}
    assert "commenter" not in agents
    assert "bot-commenter" in agents
    body["sender"]["type"] = "User"
    view = hs.processed(hs.send("issue_comment", body))
    assert {o["agent"] for o in view["outcomes"]} >= {"commenter", "bot-commenter"}
    decisions = [d for d in view["decisions"] if d.get("agent") == "commenter"]
    assert decisions and decisions[0]["fires"] is True


def test_unknown_delivery_installation_mints_from_the_connected_one(connected: Hookspawn) -> None:
    hs = connected
    body = hs.pr()
    body["installation"] = {"id": 999999, "node_id": "nope"}
    view = hs.processed(hs.send("pull_request", body))
    assert hs.outcome(view, "pr-review")["outcome"] == "dispatched"
    mints = hs.github.requests_to("access_tokens")
    assert mints
    assert all(f"/app/installations/{INSTALLATION}/access_tokens" == r.path for r in mints)


def test_requested_permissions_match_capabilities_exactly(connected: Hookspawn) -> None:
    hs = connected
    hs.processed(hs.send("pull_request", hs.pr()))
    bodies = [r.body for r in hs.github.requests_to("access_tokens")]
    assert {
        "repository_ids": [REPO_ID],
        "permissions": {
            "contents": "read",
            "pull_requests": "write",
            "issues": "write",
            "checks": "read",
            "actions": "read",
            "metadata": "read",
        },
    } in bodies
    # head-branch leaves capabilities out: each takes its own default
    assert {
        "repository_ids": [REPO_ID],
        "permissions": {
            "contents": "write",
            "pull_requests": "write",
            "issues": "write",
            "checks": "read",
            "actions": "read",
            "metadata": "read",
        },
    } in bodies


def test_mint_422_not_accessible_prunes_and_later_events_are_suppressed(
    connected: Hookspawn,
) -> None:
    hs = connected
    hs.github.remove_repository(INSTALLATION, REPO_ID)  # GitHub now answers 422
    view = hs.processed(hs.send("pull_request", hs.pr()))
    # the first spawn to ask is refused and prunes; the rest of the delivery is suppressed
    first = view["outcomes"][0]
    assert first["outcome"] == "refused"
    assert first["code"] == "repository_access_revoked"
    assert REPO in first["message"]
    assert [o["code"] for o in view["outcomes"][1:]] == ["repository_not_covered"] * (
        len(view["outcomes"]) - 1
    )
    connections = hs.client.get("/connections").json()["items"]
    mine = next(c for c in connections if c["id"] == INSTALLATION)
    assert REPO_ID in [r["id"] for r in mine["pruned"]]
    before = hs.github.count()
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.outcome(view, "pr-review")["outcome"] == "suppressed"
    assert hs.github.count() == before


def test_mint_500s_are_retried_without_prune(connected: Hookspawn) -> None:
    hs = connected
    hs.github.fail_next("access_tokens", 500, times=3)
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert hs.outcome(view, "pr-review")["outcome"] == "dispatched"
    mine = next(c for c in hs.client.get("/connections").json()["items"] if c["id"] == INSTALLATION)
    assert mine["status"] == "active"
    assert mine["pruned"] == []


def test_a_spawn_that_got_through_is_not_held_back_by_one_to_retry(connected: Hookspawn) -> None:
    """Two agents fire; the second one's token fails once (500). The first one's session is
    created in that attempt all the same; the retry finds it there and creates the other."""
    hs = connected
    before = sessions_timed(hs)
    hs.github.fail_next("access_tokens", 500, times=1, after=1)
    view = hs.processed(hs.send("pull_request", hs.pr()))
    assert len(view["runs"]) == 1  # the first attempt recorded no run
    outcomes = [hs.outcome(view, agent) for agent in ("pr-review", "head-branch")]
    assert [o["outcome"] for o in outcomes] == ["dispatched", "dispatched"]
    messages = sorted(o["message"].split(" ", 2)[2] for o in outcomes)
    assert messages == ["(already dispatched)", "created"]
    assert len(hs.sessions("pr-review")) == 1
    assert len(hs.sessions("head-branch")) == 1
    # both sessions were created (one before the retry, one in it): both are timed
    assert sessions_timed(hs) - before == 2


def test_mint_401_is_loud_and_prunes_nothing(connected: Hookspawn) -> None:
    hs = connected
    hs.github.fail_next("access_tokens", 401, times=50)
    view = hs.processed(hs.send("pull_request", hs.pr()))
    outcome = hs.outcome(view, "pr-review")
    assert outcome["outcome"] == "failed"
    mine = next(c for c in hs.client.get("/connections").json()["items"] if c["id"] == INSTALLATION)
    assert mine["status"] == "active"
    assert mine["pruned"] == []


def test_manual_starts(connected: Hookspawn) -> None:
    hs = connected
    refused = hs.client.post("/agents/pr-review/sessions")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "event_required"
    assert "/workspace/hello" in error["message"]
    assert "refs/pull/{{payload.github.pullRequest.number}}/head" in error["message"]
    assert "matching event trigger" in error["message"]

    started = hs.client.post(
        "/agents/nightly/sessions",
        json={"displayTitle": "Nightly", "initialPrompt": "go", "requester": "alice"},
        headers={"Idempotency-Key": "night-1"},
    )
    assert started.status_code == 201, started.text
    session = started.json()
    assert session["displayTitle"] == "Nightly"
    assert session["origin"]["kind"] == "manual"
    assert session["requester"] == {"login": "alice", "id": None}
    again = hs.client.post(
        "/agents/nightly/sessions",
        json={"displayTitle": "Nightly", "initialPrompt": "go", "requester": "alice"},
        headers={"Idempotency-Key": "night-1"},
    )
    assert again.json()["id"] == session["id"]
    assert len(hs.sessions("nightly")) == 1

    uncovered = hs.client.post("/agents/elsewhere/sessions")
    assert uncovered.status_code == 403
    assert uncovered.json()["error"]["code"] == "unauthorized_repository"

    missing = hs.client.post("/agents/nobody/sessions")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "agent_not_found"


def test_agent_to_agent_spawn_depth(connected: Hookspawn) -> None:
    hs = connected
    parent = hs.client.post("/agents/nightly/sessions", json={"requester": "alice"}).json()
    assert hs.client.post("/agents/nightly/sessions").json()["requester"] is None
    ids = [parent["id"]]
    for depth in range(1, 6):
        child = hs.client.post(f"/sessions/{ids[-1]}/spawn", json={"agent": "nightly"})
        assert child.status_code == 201, child.text
        assert child.json()["origin"] == {
            "kind": "agent",
            "deliveryId": None,
            "parentSessionId": ids[-1],
            "depth": depth,
            "trigger": None,
            "triggerKey": None,
        }
        assert child.json()["requester"] == {"login": "alice", "id": None}  # the parent's
        ids.append(child.json()["id"])
    too_deep = hs.client.post(f"/sessions/{ids[-1]}/spawn", json={"agent": "nightly"})
    assert too_deep.status_code == 409
    assert too_deep.json()["error"]["code"] == "spawn_depth_exceeded"
    event_dependent = hs.client.post(f"/sessions/{ids[0]}/spawn", json={"agent": "pr-review"})
    assert event_dependent.status_code == 409
    assert event_dependent.json()["error"]["code"] == "event_required"


def test_agents_endpoint_shows_event_dependence(connected: Hookspawn) -> None:
    items = {a["name"]: a for a in connected.client.get("/agents").json()["items"]}
    assert items["pr-review"]["eventDependent"] is True
    assert items["nightly"]["eventDependent"] is False
    assert items["pr-review"]["triggers"][0]["event"] == "pull_request"


def test_session_schema_is_served(connected: Hookspawn) -> None:
    schema = connected.client.get("/schemas/session.json").json()
    assert "mounts" in schema["properties"]
    assert "token" not in str(schema["properties"]).lower()
