"""Every GitHub tool hookspawn knows, over MCP against the GitHub stand-in: each call made with a
token minted for it alone, scoped to that one tool (or method) on that one repository, and
revoked once the call is made; the refusals of a tool the session lacks, a name no tool has and
the Actions mutations no capability grants."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from mcp.client.session import ClientSession

from agents.github_tools import TOOLS
from tests.workers.session.broker.conftest import INSTALLATION, BrokerEnv
from tests.workers.session.broker.test_mcp_endpoint import _mcp, _text

REPO = {"owner": "acme", "repo": "widgets"}
WIDGETS = "acme/widgets"

Call = tuple[str, dict[str, Any]]


def _calls(comment: int) -> list[Call]:
    """The operator's calls, in order (pull request 1 is `feature`; issue 2 is the bug)."""
    pr = {"pullNumber": 1}
    return [
        ("list_branches", {}),
        ("create_branch", {"branch": "feature", "from_branch": "main"}),
        (
            "create_or_update_file",
            {"path": "a.txt", "content": "a\n", "message": "add a", "branch": "feature"},
        ),
        (
            "push_files",
            {
                "branch": "feature",
                "message": "add b and c",
                "files": [{"path": "b.txt", "content": "b\n"}, {"path": "c.txt", "content": "c"}],
            },
        ),
        ("delete_file", {"path": "c.txt", "message": "drop c", "branch": "feature"}),
        ("list_commits", {"sha": "feature", "fields": ["commit"]}),
        ("get_commit", {"sha": "feature", "detail": "stats"}),
        ("get_file_contents", {"path": "b.txt", "ref": "refs/heads/feature"}),
        ("list_tags", {}),
        ("get_tag", {"tag": "v1"}),
        ("list_releases", {"fields": ["tag_name"]}),
        ("get_latest_release", {}),
        ("get_release_by_tag", {"tag": "v1"}),
        ("get_repository_tree", {"tree_sha": "feature", "recursive": True}),
        ("create_pull_request", {"title": "Feature", "head": "feature", "base": "main"}),
        ("list_pull_requests", {"state": "open", "fields": ["number", "title"]}),
        *[
            ("pull_request_read", {"method": method, **pr})
            for method in (
                "get",
                "get_diff",
                "get_files",
                "get_commits",
                "get_review_comments",
                "get_reviews",
                "get_comments",
                "get_status",
                "get_check_runs",
            )
        ],
        ("get_pull_request", pr),
        ("get_pull_request_files", pr),
        ("get_pull_request_diff", pr),
        ("get_pull_request_status", pr),
        (
            "update_pull_request",
            {**pr, "title": "Feature!", "draft": True, "reviewers": ["octo", "acme/core"]},
        ),
        ("update_pull_request_branch", pr),
        ("pull_request_review_write", {"method": "create", **pr, "body": "pending"}),
        ("pull_request_review_write", {"method": "submit_pending", **pr, "event": "COMMENT"}),
        ("pull_request_review_write", {"method": "create", **pr, "body": "again"}),
        ("pull_request_review_write", {"method": "delete_pending", **pr}),
        ("pull_request_review_write", {"method": "create", **pr, "event": "APPROVE"}),
        ("add_reply_to_pull_request_comment", {"commentId": comment, "body": "done", **pr}),
        ("add_reply_to_pull_request_comment", {"commentId": comment, "reaction": "+1"}),
        ("request_copilot_review", pr),
        ("issue_write", {"method": "create", "title": "a bug", "labels": ["bug"]}),
        *[
            ("issue_read", {"method": method, "issue_number": 2})
            for method in ("get", "get_labels", "get_sub_issues")
        ],
        ("get_issue", {"issue_number": 2}),
        ("add_issue_comment", {"issue_number": 2, "body": "seen", "reaction": "eyes"}),
        ("issue_read", {"method": "get_comments", "issue_number": 2}),
        ("create_issue", {"title": "another", "body": "text"}),
        ("update_issue", {"issue_number": 2, "state": "closed"}),
        (
            "issue_write",
            {
                "method": "update",
                "issue_number": 3,
                "state": "closed",
                "state_reason": "not_planned",
            },
        ),
        ("list_issues", {"state": "CLOSED", "perPage": 1}),
        ("list_issues", {"state": "CLOSED", "perPage": 1, "after": "2"}),
        ("actions_list", {"method": "list_workflows"}),
        ("actions_list", {"method": "list_workflow_runs", "resource_id": "ci.yml"}),
        ("actions_list", {"method": "list_workflow_jobs", "resource_id": "1"}),
        ("actions_list", {"method": "list_workflow_run_artifacts", "resource_id": "1"}),
        *[
            ("actions_get", {"method": method, "resource_id": resource})
            for method, resource in (
                ("get_workflow", "ci.yml"),
                ("get_workflow_run", "1"),
                ("get_workflow_job", "10"),
                ("get_workflow_run_usage", "1"),
                ("get_workflow_run_logs_url", "1"),
                ("download_workflow_run_artifact", "5"),
            )
        ],
        ("list_workflow_runs", {"workflow_id": "ci.yml"}),
        ("rerun_failed_jobs", {"run_id": 1}),
        ("rerun_workflow_run", {"run_id": 2}),
        ("actions_run_trigger", {"method": "rerun_failed_jobs", "run_id": 3}),
        ("actions_run_trigger", {"method": "rerun_workflow_run", "run_id": 4}),
        ("rerun_failed_jobs_for_pr_head", pr),
        ("enable_pull_request_auto_merge", {**pr, "merge_method": "squash"}),
        ("merge_pull_request", {**pr, "merge_method": "merge"}),
    ]


@pytest.mark.slow
@pytest.mark.timeout(300)  # some 90 calls, each minting and revoking its own token
def test_every_tool_runs_against_github(broker_env: BrokerEnv) -> None:
    github = broker_env.github
    repos = github.repos
    repos.add(WIDGETS, {"README.md": "widgets\n"})
    repos.add_tag(WIDGETS, "v1")
    repos.add_release(WIDGETS, "v1", "First")
    for conclusion in ("failure", "success", "failure", "success"):
        repos.add_run(WIDGETS, "ci.yml", "main", conclusion)
    repos.add_secret(WIDGETS, "DEPLOY_KEY")
    operator, merger = broker_env.start("operator"), broker_env.start("merger")
    calls = _calls(comment=1000)
    # every tool of the table but the secrets list (the merger's: secrets: read) is called
    assert {name for name, _ in calls} == set(TOOLS) - {"actions_secret_list"}
    minted = github.count("access_tokens")

    async def work(client: ClientSession) -> dict[str, Any]:
        listed = {t.name for t in (await client.list_tools()).tools}
        answers = []
        for name, arguments in calls:
            if name == "create_pull_request":
                answers.append(await client.call_tool(name, {**REPO, **arguments}))
                repos.add_review_comment(WIDGETS, 1, "rename this")
                continue
            if name == "rerun_failed_jobs_for_pr_head":  # a failed run of the head commit
                repos.add_run(WIDGETS, "ci.yml", "feature", "failure")
            answers.append(await client.call_tool(name, {**REPO, **arguments}))
        return {"listed": listed, "answers": answers}

    got = _mcp(broker_env, operator, work)
    assert got["listed"] == set(TOOLS) - {"actions_secret_list"}
    answers = got["answers"]
    for (name, arguments), result in zip(calls, answers, strict=True):
        assert not result.is_error, (name, arguments, result.content[0].text)
    text = [result.content[0].text for result in answers]
    by = {(name, args.get("method")): t for (name, args), t in zip(calls, text, strict=True)}

    def doc(name: str, method: str | None = None) -> Any:
        return json.loads(by[(name, method)])

    assert [b["name"] for b in doc("list_branches")] == ["main"]
    assert doc("delete_file")["commit"]["message"] == "drop c"
    assert [c["commit"]["message"] for c in doc("list_commits")] == [
        "drop c",
        "add b and c",
        "add a",
        "initial",
    ]
    assert all(set(c) == {"commit"} for c in doc("list_commits"))  # fields: just those
    assert [f["filename"] for f in doc("get_commit")["files"]] == ["c.txt"]
    assert "patch" not in doc("get_commit")["files"][0]  # detail: stats
    assert by[("get_file_contents", None)] == "b\n"
    assert [t["name"] for t in doc("list_tags")] == ["v1"]
    assert doc("get_tag")["ref"] == "refs/tags/v1"
    assert doc("list_releases") == [{"tag_name": "v1"}]
    assert doc("get_latest_release")["name"] == doc("get_release_by_tag")["name"] == "First"
    assert [e["path"] for e in doc("get_repository_tree")["tree"]] == [
        "README.md",
        "a.txt",
        "b.txt",
    ]
    assert doc("list_pull_requests") == [{"number": 1, "title": "Feature"}]
    assert doc("pull_request_read", "get")["title"] == "Feature"
    assert "diff --git a/b.txt b/b.txt" in by[("pull_request_read", "get_diff")]
    assert by[("pull_request_read", "get_diff")] == by[("get_pull_request_diff", None)]
    assert [f["filename"] for f in doc("pull_request_read", "get_files")] == ["a.txt", "b.txt"]
    assert doc("get_pull_request_files") == doc("pull_request_read", "get_files")
    assert [c["commit"]["message"] for c in doc("pull_request_read", "get_commits")] == [
        "add a",
        "add b and c",
        "drop c",
    ]
    assert [c["body"] for c in doc("pull_request_read", "get_review_comments")] == ["rename this"]
    assert doc("pull_request_read", "get_status")["state"] == "success"
    assert doc("get_pull_request_status") == doc("pull_request_read", "get_check_runs")
    updated = doc("update_pull_request")
    assert (updated["title"], updated["draft"]) == ("Feature!", True)
    assert updated["requested_reviewers"] == [{"login": "octo"}]
    assert updated["requested_teams"] == [{"slug": "core"}]
    pull = repos.pull(WIDGETS, 1)
    assert [r["state"] for r in pull["reviews"]] == ["COMMENTED", "APPROVED"]
    assert pull["requested_reviewers"] == [{"login": "copilot-pull-request-reviewer[bot]"}]
    assert pull["auto_merge"]["mergeMethod"] == "SQUASH"
    assert pull["merged"] is True
    replies = [c for c in repos.review_comments(WIDGETS) if c.get("in_reply_to_id") == 1000]
    assert [c["body"] for c in replies] == ["done"]
    reactions = [(r.get("comment"), r.get("content")) for r in repos.reactions(WIDGETS)]
    assert (1000, "+1") in reactions
    assert doc("issue_read", "get")["title"] == "a bug"
    assert doc("issue_read", "get_labels") == [{"name": "bug"}]
    assert doc("issue_read", "get_sub_issues") == []
    assert [c["body"] for c in doc("issue_read", "get_comments")] == ["seen"]
    assert doc("add_issue_comment")["reaction"]["content"] == "eyes"
    assert doc("update_issue")["state"] == "closed"
    assert doc("issue_write", "update")["state_reason"] == "not_planned"
    closed = [i["title"] for i in repos.issues(WIDGETS) if i["state"] == "closed"]
    assert closed == ["a bug", "another"]
    pages = [
        json.loads(t) for (name, _), t in zip(calls, text, strict=True) if name == "list_issues"
    ]
    assert [[i["title"] for i in p["issues"]] for p in pages] == [["a bug"], ["another"]]
    assert pages[0]["pageInfo"] == {"hasNextPage": True, "endCursor": "2"}
    assert [w["path"] for w in doc("actions_list", "list_workflows")["workflows"]] == [
        ".github/workflows/ci.yml"
    ]
    assert doc("actions_list", "list_workflow_runs")["total_count"] == 4
    assert doc("actions_list", "list_workflow_jobs")["jobs"][0]["id"] == 10
    assert doc("actions_get", "get_workflow_run")["conclusion"] == "failure"
    assert doc("actions_get", "get_workflow_run_logs_url")["logs_url"].endswith("/runs/1.zip")
    assert doc("actions_get", "download_workflow_run_artifact")["download_url"].endswith("5.zip")
    assert doc("rerun_failed_jobs_for_pr_head")["rerun"] == [5]
    reruns = {r["id"]: r["rerun"] for r in repos.runs(WIDGETS)}
    assert reruns == {
        1: "rerun-failed-jobs",
        2: "rerun",
        3: "rerun-failed-jobs",
        4: "rerun",
        5: "rerun-failed-jobs",
    }
    assert repos.files(WIDGETS)["b.txt"] == "b\n"

    # the secrets list: names, never values, with secrets: read
    async def secrets(client: ClientSession) -> Any:
        return await client.call_tool("actions_secret_list", REPO)

    listed_secrets = _mcp(broker_env, merger, secrets)
    assert not listed_secrets.is_error, listed_secrets.content[0].text
    assert [s["name"] for s in json.loads(listed_secrets.content[0].text)["secrets"]] == [
        "DEPLOY_KEY"
    ]

    # one token per call, each for this repository alone with the one permission its tool (or
    # method) needs, and each revoked at GitHub once its call was made
    assert github.count("access_tokens") - minted == len(calls) + 1
    grants: dict[tuple[str, str], dict[str, str]] = {}
    used: set[str] = set()
    for request in github.requests:
        if not request.path.startswith("/repos/acme/widgets") and request.path != "/graphql":
            continue
        token = request.headers["authorization"].partition(" ")[2]
        grant = github.token_grant(token)
        assert grant is not None
        installation, repositories, permissions = grant
        assert (installation, repositories) == (INSTALLATION, (101,))
        grants[(request.method, request.path)] = permissions
        used.add(token)
    assert len(used) == len(calls) + 1
    deadline = time.monotonic() + 30  # revoked on the revoking thread, after each answer
    while not used <= github.revoked:
        assert time.monotonic() < deadline, used - github.revoked
        time.sleep(0.05)
    merging = {"contents": "write", "pull_requests": "write", "metadata": "read"}
    assert grants[("PUT", "/repos/acme/widgets/pulls/1/merge")] == merging
    assert grants[("POST", "/graphql")] == merging
    assert grants[("POST", "/repos/acme/widgets/actions/runs/1/rerun-failed-jobs")] == {
        "actions": "write",
        "metadata": "read",
    }
    # the pull request's head is read with pullRequests: read beside actions: write
    assert grants[("POST", "/repos/acme/widgets/actions/runs/5/rerun-failed-jobs")] == {
        "actions": "write",
        "pull_requests": "read",
        "metadata": "read",
    }
    assert grants[("GET", "/repos/acme/widgets/commits/pull/1/head/check-runs")] == {
        "checks": "read",
        "metadata": "read",
    }
    assert grants[("GET", "/repos/acme/widgets/actions/secrets")] == {
        "secrets": "read",
        "metadata": "read",
    }


def test_refusals_name_what_is_missing_and_mint_nothing(broker_env: BrokerEnv) -> None:
    github = broker_env.github
    github.repos.add(WIDGETS, {"README.md": "widgets\n"})
    github.repos.add_run(WIDGETS, "ci.yml", "main", "failure")
    reader, writer, operator = (broker_env.start(a) for a in ("reader", "writer", "operator"))

    async def call(client: ClientSession, name: str, **arguments: Any) -> tuple[bool, str]:
        result = await client.call_tool(name, {**REPO, **arguments})
        return result.is_error, _text(result)

    async def as_reader(client: ClientSession) -> list[tuple[bool, str]]:
        return [
            # a tool the table has and the session lacks: tool_not_granted, whatever the
            # arguments; a name no tool has: unknown_tool
            await call(client, "actions_secret_list"),
            await call(client, "enable_pull_request_auto_merge", pullNumber=1),
            await call(client, "merge_pull_request", pullNumber="../../x"),
            await call(client, "rerun_failed_jobs", run_id=1),
            await call(client, "no_such_tool"),
            await call(client, "run_workflow", workflow_id="ci.yml", ref="main"),
        ]

    async def as_writer(client: ClientSession) -> list[tuple[bool, str]]:
        # actions: read (the default): the reruns are not the session's
        return [
            await call(client, "actions_run_trigger", method="rerun_failed_jobs", run_id=1),
            await call(client, "rerun_failed_jobs_for_pr_head", pullNumber=1),
        ]

    async def as_operator(client: ClientSession) -> list[tuple[bool, str]]:
        return [
            await call(
                client,
                "actions_run_trigger",
                method="run_workflow",
                workflow_id="ci.yml",
                ref="main",
            ),
            await call(client, "actions_run_trigger", method="cancel_workflow_run", run_id=1),
            await call(client, "actions_run_trigger", method="delete_workflow_run_logs", run_id=1),
            await call(client, "actions_run_trigger", method="launch", run_id=1),
            await call(client, "pull_request_review_write", method="resolve_thread", pullNumber=1),
            await call(client, "issue_read", issue_number=1),  # no method at all
        ]

    minted = github.count("access_tokens")
    refused = _mcp(broker_env, reader, as_reader)
    refused += _mcp(broker_env, writer, as_writer)
    refused += _mcp(broker_env, operator, as_operator)
    assert all(is_error for is_error, _ in refused)
    codes = [text.partition(": ")[0] for _, text in refused]
    assert codes == [
        *["tool_not_granted"] * 4,
        "unknown_tool",
        "unknown_tool",
        *["tool_not_granted"] * 2,
        *["tool_not_granted"] * 3,
        *["invalid_argument"] * 3,
    ]
    texts = [text for _, text in refused]
    assert "secrets: read" in texts[0] and "merge: write" in texts[1]
    assert "actions: write adds only the reruns" in texts[8]
    assert "rerun_failed_jobs and rerun_workflow_run" in texts[8]
    assert "'launch'" in texts[11] and "rerun_workflow_run" in texts[11]
    assert "'resolve_thread'" in texts[12] and "submit_pending" in texts[12]
    # nothing was minted for any of them, and nothing reached the repository
    assert github.count("access_tokens") == minted
    assert github.repos.runs(WIDGETS)[0]["rerun"] is None
    # each refusal of a known tool is on the session's audit, with its method
    audit = broker_env.rt.audit
    denied = [
        (e.get("tool"), e.get("method"), e.get("code"))
        for e in audit.entries(operator.id)
        if e.get("kind") == "tool"
    ]
    assert ("actions_run_trigger", "run_workflow", "tool_not_granted") in denied

    # the gate's own route decides per method too
    def decide(method: str | None) -> Any:
        body: dict[str, Any] = {"repository": WIDGETS}
        if method is not None:
            body["method"] = method
        return broker_env.client.post(
            f"/sessions/{operator.id}/github-tools/actions_run_trigger",
            json=body,
            headers=operator.auth,
        )

    allowed = decide("rerun_failed_jobs")
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["permissions"] == {"actions": "write", "metadata": "read"}
    refused_route = decide("run_workflow")
    assert refused_route.status_code == 403
    assert refused_route.json()["error"]["code"] == "tool_not_granted"
