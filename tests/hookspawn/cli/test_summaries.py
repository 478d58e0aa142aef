"""The readable summaries `deliveries` and `sessions` print without --json."""

from __future__ import annotations

import re
from typing import Any

from hookspawn.cli.summaries import (
    connections_text,
    deliveries_text,
    delivery_text,
    replay_text,
    session_text,
    sessions_text,
    sync_text,
)

DELIVERY: dict[str, Any] = {
    "deliveryId": "d-1",
    "event": "pull_request",
    "action": "opened",
    "repository": "acme/widgets",
    "status": "processed",
    "receivedAt": "2026-12-01T10:00:00Z",
    "processedAt": "2026-12-01T10:00:01Z",
    "error": None,
    "outcomes": [
        {"agent": "pr-review", "trigger": 0, "triggerKey": "review", "outcome": "dispatched",
         "code": None, "message": "dispatched", "sessionId": "hs-1"},
        {"agent": "fix", "trigger": 0, "triggerKey": None, "outcome": "suppressed",
         "code": "repository_not_covered", "message": "acme/widgets is not covered",
         "sessionId": None},
    ],
}  # fmt: skip


def cells(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line) for line in text.splitlines()]


def test_deliveries_list_is_a_table_newest_first() -> None:
    push = {**DELIVERY, "deliveryId": "d-2", "event": "push", "action": None, "repository": None}
    text = deliveries_text({"items": [push, DELIVERY]})
    words = "suppressed: repository_not_covered, dispatched 1"
    assert cells(text) == [
        ["DELIVERY", "EVENT", "REPOSITORY", "OUTCOME", "SESSIONS", "RECEIVED"],
        ["d-2", "push", "-", words, "-", "2026-12-01T10:00:00Z"],
        ["d-1", "pull_request.opened", "acme/widgets", words, "-", "2026-12-01T10:00:00Z"],
    ]
    assert deliveries_text({"items": []}) == "no deliveries\n"


def test_every_delivery_says_what_it_came_to_in_the_uis_words() -> None:
    suppressed = {**DELIVERY, "outcomes": DELIVERY["outcomes"][1:]}
    nothing = {**DELIVERY, "outcomes": []}
    queued = {**DELIVERY, "status": "queued", "outcomes": []}
    failed = {**DELIVERY, "status": "failed", "error": "dispatch_failed: gave up", "outcomes": []}
    dispatched = DELIVERY["outcomes"][0]
    running = {
        **DELIVERY,
        "outcomes": [
            {**dispatched, "sessionStatus": "failed"},
            {**dispatched, "sessionStatus": "succeeded"},
            {**dispatched, "sessionStatus": "succeeded"},
        ],
    }
    rows = cells(deliveries_text({"items": [suppressed, nothing, queued, failed, running]}))
    assert [row[3:5] for row in rows[1:]] == [
        ["suppressed: repository_not_covered", "-"],
        ["no match", "-"],
        ["queued", "-"],
        ["failed: dispatch_failed", "-"],
        ["dispatched 3", "1 failed, 2 succeeded"],
    ]


def test_delivery_show_says_each_outcome() -> None:
    assert delivery_text(DELIVERY).splitlines() == [
        "delivery d-1: pull_request.opened on acme/widgets",
        "outcome: suppressed: repository_not_covered, dispatched 1 (received "
        "2026-12-01T10:00:00Z, processed 2026-12-01T10:00:01Z)",
        "outcomes:",
        "  pr-review (trigger review): dispatched, session hs-1",
        "  fix (trigger 0): suppressed: repository_not_covered (acme/widgets is not covered)",
    ]
    quiet = {**DELIVERY, "outcomes": []}
    assert delivery_text(quiet).splitlines()[1].startswith("outcome: no match (received")
    failed = {**DELIVERY, "status": "failed", "error": "attempts_exhausted", "outcomes": []}
    assert delivery_text(failed).splitlines()[1:] == [
        "outcome: failed: attempts_exhausted (received 2026-12-01T10:00:00Z, processed "
        "2026-12-01T10:00:01Z)",
        "error: attempts_exhausted",
    ]


SESSION = {
    "id": "hs-1",
    "agent": "pr-review",
    "harness": "claude-code",
    "createdAt": "2026-12-01T10:00:01Z",
    "origin": {"kind": "trigger", "deliveryId": "d-1"},
    "displayTitle": "Review #2",
    "initialPrompt": "Review it.\nCarefully.",
    "mounts": [
        {"mountPath": "/workspace/w", "repository": "acme/widgets", "ref": "refs/pull/2/head",
         "auth": "githubApp", "capabilities": {"contents": "read", "issues": "none"}},
    ],
}  # fmt: skip


def test_sessions_list_and_show() -> None:
    manual = {**SESSION, "id": "hs-2", "origin": {"kind": "manual"}, "displayTitle": None}
    assert sessions_text({"items": [manual, SESSION]}).splitlines() == [
        "SESSION  AGENT      STATUS  CREATED               ORIGIN       TITLE",
        "hs-2     pr-review  -       2026-12-01T10:00:01Z  manual",
        "hs-1     pr-review  -       2026-12-01T10:00:01Z  trigger d-1  Review #2",
    ]
    assert sessions_text({"items": []}) == "no sessions\n"
    assert session_text(SESSION).splitlines() == [
        "session hs-1",
        "agent: pr-review (claude-code)",
        "created: 2026-12-01T10:00:01Z",
        "origin: trigger d-1",
        "title: Review #2",
        "mounts:",
        "  /workspace/w  acme/widgets @ refs/pull/2/head  (githubApp: contents read)",
        "prompt:",
        "  Review it.",
        "  Carefully.",
    ]


def test_connections_list_and_sync() -> None:
    answer = {
        "items": [
            {"id": 7, "account": "acme", "status": "active",
             "repositories": [{"id": 1, "fullName": "acme/widgets"},
                              {"id": 2, "fullName": "acme/gears"}],
             "pruned": [{"id": 3, "fullName": "acme/old"}]},
            {"id": 9, "account": "solo", "status": "suspended", "repositories": [], "pruned": []},
            {"id": 424242, "account": "acme", "status": "active", "demo": True,
             "repositories": [{"id": 4, "fullName": "acme/widgets"}], "pruned": []},
        ]
    }  # fmt: skip
    assert connections_text(answer).splitlines() == [
        "INSTALLATION  ACCOUNT  STATUS       COVERS",
        "7             acme     active       acme/widgets, acme/gears (pruned: acme/old)",
        "9             solo     suspended    -",
        "424242        acme     active demo  acme/widgets",
    ]
    assert connections_text({"items": []}).startswith("no connections")
    report = {"installations": 1, "repositories": 2, "summary": ["installation 7 (acme) added"]}
    assert sync_text(report).splitlines() == [
        "synced 1 installation covering 2 repositories",
        "installation 7 (acme) added",
    ]


def test_a_delivery_whose_session_failed_does_not_read_as_a_success() -> None:
    dispatched: dict[str, Any] = {"agent": "pr-review", "trigger": 0, "triggerKey": "review"}
    dispatched |= {"outcome": "dispatched", "code": None, "message": "dispatched"}
    ran = [
        {**dispatched, "sessionId": "hs-1", "sessionStatus": "succeeded"},
        {**dispatched, "sessionId": "hs-2", "sessionStatus": "failed"},
        {**dispatched, "sessionId": "hs-3", "sessionStatus": "succeeded"},
    ]
    text = deliveries_text({"items": [{**DELIVERY, "outcomes": ran}]})
    assert "  1 failed, 2 succeeded  " in text
    shown = delivery_text({**DELIVERY, "outcomes": ran}).splitlines()
    assert "  pr-review (trigger review): dispatched, session hs-2 (failed)" in shown


def test_sessions_list_shows_the_status_and_the_failure_code() -> None:
    lost = {**SESSION, "status": "failed", "failure": {"code": "runner_lost", "message": "m"}}
    running = {**SESSION, "id": "hs-2", "status": "running", "failure": None}
    lines = sessions_text({"items": [running, lost]}).splitlines()
    assert lines[0].split()[:3] == ["SESSION", "AGENT", "STATUS"]
    assert lines[1].split()[:3] == ["hs-2", "pr-review", "running"]
    assert lines[2].split()[:4] == ["hs-1", "pr-review", "failed", "runner_lost"]


def test_replay_names_the_sessions_that_are_not_run_again() -> None:
    answer = {
        "deliveryId": "d-1",
        "status": "queued",
        "existingSessions": [
            {"sessionId": "hs-1", "agent": "pr-review", "sessionStatus": "failed"}
        ],
    }
    assert replay_text(answer, "http://h/ui/deliveries/d-1").splitlines() == [
        "replay of d-1 queued",
        "session hs-1 (failed) of pr-review already exists: it is not run again",
        "follow it at http://h/ui/deliveries/d-1",
    ]


def test_a_session_shows_how_its_harness_ran_or_why_it_was_skipped() -> None:
    ran = {
        **SESSION,
        "status": "succeeded",
        "harnessRun": {"name": "claude-code", "version": "2.1.332"},
        "result": "Reviewed.\nTwo notes.",
        "usage": {"inputTokens": 120, "outputTokens": 30, "turns": 2, "costUsd": 0.01234},
    }
    text = session_text(ran)
    assert "harness: claude-code 2.1.332\n" in text
    assert "usage: 120 tokens in, 30 out, 2 turn(s), $0.0123\n" in text
    assert "result:\n  Reviewed.\n  Two notes.\n" in text
    skipped = {
        **SESSION,
        "status": "succeeded",
        "harnessRun": {"name": "codex", "skipped": "HOOKSPAWN_OPENAI_API_KEY is unset"},
    }
    assert "harness: codex skipped: HOOKSPAWN_OPENAI_API_KEY is unset\n" in session_text(skipped)
    [line] = sessions_text({"items": [skipped]}).splitlines()[1:]
    assert "succeeded (harness skipped)" in line
    assert "usage:" not in session_text(skipped) and "result:" not in session_text(skipped)
