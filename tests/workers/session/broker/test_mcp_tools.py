"""Every GitHub tool hookspawn executes, over MCP against the GitHub stand-in, each GitHub call
made with a token scoped to that one tool on that one repository."""

from __future__ import annotations

import json
from typing import Any

from mcp.client.session import ClientSession

from agents.github_tool_schemas import TOOL_SCHEMAS
from tests.workers.session.broker.conftest import INSTALLATION, BrokerEnv
from tests.workers.session.broker.test_mcp_endpoint import _mcp

REPO = {"owner": "acme", "repo": "widgets"}


def test_every_tool_runs_against_github(broker_env: BrokerEnv) -> None:
    github = broker_env.github
    github.repos.add("acme/widgets", {"README.md": "widgets\n"})
    operator = broker_env.start("operator")
    calls: list[tuple[str, dict[str, Any]]] = [
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
        ("list_commits", {"sha": "feature"}),
        ("get_file_contents", {"path": "b.txt", "ref": "refs/heads/feature"}),
        ("create_pull_request", {"title": "Feature", "head": "feature", "base": "main"}),
        ("list_pull_requests", {"state": "open"}),
        ("get_pull_request", {"pullNumber": 1}),
        ("get_pull_request_files", {"pullNumber": 1}),
        ("get_pull_request_diff", {"pullNumber": 1}),
        ("update_pull_request", {"pullNumber": 1, "title": "Feature!", "reviewers": ["octo"]}),
        (
            "pull_request_review_write",
            {"method": "create", "pullNumber": 1, "event": "APPROVE", "body": "ok"},
        ),
        ("get_pull_request_status", {"pullNumber": 1}),
        ("create_issue", {"title": "a bug", "labels": ["bug"]}),
        ("get_issue", {"issue_number": 2}),
        ("add_issue_comment", {"issue_number": 2, "body": "seen"}),
        ("update_issue", {"issue_number": 2, "state": "closed"}),
        ("list_issues", {"state": "all"}),
        ("run_workflow", {"workflow_id": "ci.yml", "ref": "main"}),
        ("list_workflow_runs", {"workflow_id": "ci.yml"}),
        ("merge_pull_request", {"pullNumber": 1, "merge_method": "merge"}),
    ]
    assert {name for name, _ in calls} == set(TOOL_SCHEMAS)

    async def work(client: ClientSession) -> dict[str, Any]:
        listed = {t.name for t in (await client.list_tools()).tools}
        answers = {}
        for name, arguments in calls:
            answers[name] = await client.call_tool(name, {**REPO, **arguments})
        return {"listed": listed, "answers": answers}

    got = _mcp(broker_env, operator, work)
    assert got["listed"] == set(TOOL_SCHEMAS)
    answers = got["answers"]
    for name, result in answers.items():
        assert not result.is_error, (name, result.content[0].text)
    text = {name: result.content[0].text for name, result in answers.items()}
    assert [b["name"] for b in json.loads(text["list_branches"])] == ["main"]
    assert text["get_file_contents"] == "b\n"
    assert [c["commit"]["message"] for c in json.loads(text["list_commits"])] == [
        "add b and c",
        "add a",
        "initial",
    ]
    assert json.loads(text["create_pull_request"])["number"] == 1
    assert [p["title"] for p in json.loads(text["list_pull_requests"])] == ["Feature"]
    files = json.loads(text["get_pull_request_files"])
    assert [f["filename"] for f in files] == ["a.txt", "b.txt", "c.txt"]
    assert "diff --git a/b.txt b/b.txt" in text["get_pull_request_diff"]
    updated = json.loads(text["update_pull_request"])
    assert updated["title"] == "Feature!"
    assert updated["requested_reviewers"] == [{"login": "octo"}]
    assert json.loads(text["pull_request_review_write"])["state"] == "APPROVED"
    assert json.loads(text["get_pull_request_status"])["state"] == "success"
    assert json.loads(text["get_issue"])["title"] == "a bug"
    assert json.loads(text["update_issue"])["state"] == "closed"
    assert json.loads(text["add_issue_comment"])["body"] == "seen"
    assert [i["title"] for i in json.loads(text["list_issues"])] == ["a bug"]
    runs = json.loads(text["list_workflow_runs"])["workflow_runs"]
    assert [r["event"] for r in runs] == ["workflow_dispatch"]
    assert json.loads(text["merge_pull_request"])["merged"] is True
    assert github.repos.files("acme/widgets")["c.txt"] == "c"

    # every call to the repository carried a token for it alone, with the one permission its
    # tool needs (merging: contents and pull requests, both write)
    used = {
        r.headers["authorization"].partition(" ")[2]: r
        for r in github.requests
        if r.path.startswith("/repos/acme/widgets")
    }
    grants = {}
    for token, request in used.items():
        grant = github.token_grant(token)
        assert grant is not None
        installation, repositories, permissions = grant
        assert (installation, repositories) == (INSTALLATION, (101,))
        grants[(request.method, request.path)] = permissions
    assert grants[("PUT", "/repos/acme/widgets/pulls/1/merge")] == {
        "contents": "write",
        "pull_requests": "write",
        "metadata": "read",
    }
    assert grants[("POST", "/repos/acme/widgets/actions/workflows/ci.yml/dispatches")] == {
        "actions": "write",
        "metadata": "read",
    }
    assert grants[("GET", "/repos/acme/widgets/commits/pull/1/head/check-runs")] == {
        "checks": "read",
        "metadata": "read",
    }
    assert all(len(p) == 2 for k, p in grants.items() if not k[1].endswith("/merge")), grants
