"""Tool arguments stay in their REST path: every tool the MCP endpoint executes, with traversal
and encoding tricks in each argument that becomes part of a path, against the GitHub stand-in's
request log. A trick is refused (`invalid_argument`, nothing sent, the refusal audited) or sent
encoded inside the tool's own endpoint; no request reaches another API path."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

import pytest
from mcp.client.session import ClientSession

from agents.github_tool_arguments import PATH_ARGUMENTS
from agents.github_tool_schemas import TOOL_SCHEMAS
from tests.workers.session.broker.conftest import BrokerEnv
from tests.workers.session.broker.test_mcp_endpoint import _mcp, _text

REPO = {"owner": "acme", "repo": "widgets"}
BASE = "/repos/acme/widgets"

#: arguments each tool succeeds with (the trick replaces one of them)
VALID: dict[str, dict[str, Any]] = {
    "get_file_contents": {"path": "README.md"},
    "list_branches": {},
    "list_commits": {},
    "create_branch": {"branch": "feature", "from_branch": "main"},
    "create_or_update_file": {"path": "a.txt", "content": "a", "message": "m", "branch": "main"},
    "push_files": {"branch": "main", "message": "m", "files": [{"path": "b", "content": "b"}]},
    "get_pull_request": {"pullNumber": 1},
    "list_pull_requests": {},
    "get_pull_request_files": {"pullNumber": 1},
    "get_pull_request_diff": {"pullNumber": 1},
    "get_pull_request_status": {"pullNumber": 1},
    "create_pull_request": {"title": "t", "head": "feature", "base": "main"},
    "update_pull_request": {"pullNumber": 1, "title": "t"},
    "pull_request_review_write": {"method": "create", "pullNumber": 1, "event": "COMMENT"},
    "merge_pull_request": {"pullNumber": 1},
    "get_issue": {"issue_number": 1},
    "list_issues": {},
    "create_issue": {"title": "t"},
    "update_issue": {"issue_number": 1, "title": "t"},
    "add_issue_comment": {"issue_number": 1, "body": "b"},
    "list_workflow_runs": {"workflow_id": "ci.yml"},
    "get_commit": {"sha": "main"},
    "list_tags": {},
    "get_tag": {"tag": "v1"},
    "list_releases": {},
    "get_latest_release": {},
    "get_release_by_tag": {"tag": "v1"},
    "get_repository_tree": {"tree_sha": "main"},
    "delete_file": {"path": "README.md", "message": "m", "branch": "main"},
    "pull_request_read": {"method": "get", "pullNumber": 1},
    "update_pull_request_branch": {"pullNumber": 1},
    "add_reply_to_pull_request_comment": {"commentId": 5, "pullNumber": 1, "body": "b"},
    "request_copilot_review": {"pullNumber": 1},
    "enable_pull_request_auto_merge": {"pullNumber": 1},
    "issue_read": {"method": "get", "issue_number": 1},
    "issue_write": {"method": "update", "issue_number": 1, "title": "t"},
    "actions_list": {"method": "list_workflow_runs", "resource_id": "ci.yml"},
    "actions_get": {"method": "get_workflow_run", "resource_id": "1"},
    "actions_run_trigger": {"method": "rerun_failed_jobs", "run_id": 1},
    "rerun_failed_jobs": {"run_id": 1},
    "rerun_workflow_run": {"run_id": 1},
    "rerun_failed_jobs_for_pr_head": {"pullNumber": 1},
}

#: the requests each tool may make: METHOD and path under the repository, `{arg}` the
#: argument encoded segment by segment, `*` one segment GitHub answered (a commit sha)
ENDPOINTS: dict[str, list[str]] = {
    "get_file_contents": ["GET /contents/{path}", "GET /contents"],
    "list_branches": ["GET /branches"],
    "list_commits": ["GET /commits"],
    "create_branch": ["GET ", "GET /git/ref/heads/{from_branch}", "POST /git/refs"],
    "create_or_update_file": ["PUT /contents/{path}"],
    "push_files": [
        "GET /git/ref/heads/{branch}",
        "GET /git/commits/*",
        "POST /git/trees",
        "POST /git/commits",
        "PATCH /git/refs/heads/{branch}",
    ],
    "get_pull_request": ["GET /pulls/{pullNumber}"],
    "list_pull_requests": ["GET /pulls"],
    "get_pull_request_files": ["GET /pulls/{pullNumber}/files"],
    "get_pull_request_diff": ["GET /pulls/{pullNumber}"],
    "get_pull_request_status": ["GET /commits/pull/{pullNumber}/head/check-runs"],
    "create_pull_request": ["POST /pulls"],
    "update_pull_request": [
        "PATCH /pulls/{pullNumber}",
        "POST /pulls/{pullNumber}/requested_reviewers",
        "GET /pulls/{pullNumber}",
    ],
    "pull_request_review_write": ["POST /pulls/{pullNumber}/reviews"],
    "merge_pull_request": ["PUT /pulls/{pullNumber}/merge"],
    "get_issue": ["GET /issues/{issue_number}"],
    "list_issues": ["GET /issues"],
    "create_issue": ["POST /issues"],
    "update_issue": ["PATCH /issues/{issue_number}"],
    "add_issue_comment": ["POST /issues/{issue_number}/comments"],
    "list_workflow_runs": ["GET /actions/workflows/{workflow_id}/runs"],
    "get_commit": ["GET /commits/{sha}"],
    "list_tags": ["GET /tags"],
    "get_tag": ["GET /git/ref/tags/{tag}", "GET /git/tags/*"],
    "list_releases": ["GET /releases"],
    "get_latest_release": ["GET /releases/latest"],
    "get_release_by_tag": ["GET /releases/tags/{tag}"],
    "get_repository_tree": ["GET /git/trees/{tree_sha}"],
    "delete_file": ["GET /contents/{path}", "DELETE /contents/{path}"],
    "pull_request_read": ["GET /pulls/{pullNumber}"],
    "update_pull_request_branch": ["PUT /pulls/{pullNumber}/update-branch"],
    "add_reply_to_pull_request_comment": [
        "POST /pulls/{pullNumber}/comments/{commentId}/replies",
        "GET /pulls/comments/{commentId}",
    ],
    "request_copilot_review": ["POST /pulls/{pullNumber}/requested_reviewers"],
    "enable_pull_request_auto_merge": ["GET /pulls/{pullNumber}"],
    "issue_read": ["GET /issues/{issue_number}"],
    "issue_write": ["PATCH /issues/{issue_number}"],
    "actions_list": ["GET /actions/workflows/{resource_id}/runs", "GET /actions/runs"],
    "actions_get": ["GET /actions/runs/{resource_id}"],
    "actions_run_trigger": ["POST /actions/runs/{run_id}/rerun-failed-jobs"],
    "rerun_failed_jobs": ["POST /actions/runs/{run_id}/rerun-failed-jobs"],
    "rerun_workflow_run": ["POST /actions/runs/{run_id}/rerun"],
    "rerun_failed_jobs_for_pr_head": ["GET /pulls/{pullNumber}", "GET /actions/runs"],
}

#: the tools whose every call is refused before its arguments are looked at: the operator does
#: not see them (tool_not_granted)
UNSEEN = {"actions_secret_list"}
#: arguments outside PATH_ARGUMENTS that become part of a path, by tool
EXTRA_KINDS = {("actions_list", "resource_id"): "workflow"}
#: optional arguments: absent, the tool does without them
OPTIONAL = {
    ("add_issue_comment", "comment_id"),
    ("add_reply_to_pull_request_comment", "pullNumber"),
}

TRICKS: list[Any] = [
    "..",
    "../pulls/1/merge",
    "../../../../installation/repositories",
    "%2e%2e",
    "%2e%2e/pulls/1/merge",
    "%2E%2E%2Fpulls",
    "a%2fb",
    "a\\b",
    "..\\pulls",
    "a?b=1",
    "a#b",
    "",
    "/",
    "/etc/passwd",
    ".",
    "a//b",
    "a/./b",
    "a/../../pulls",
    "a\x00b",
    "a\nb",
]
#: a repository's owner and name: the same tricks, fewer (they are checked alike for every tool)
NAME_TRICKS: list[Any] = ["..", "%2e%2e", "a%2fb", "a\\b", "a?b", "a#b", "", "/x", "acme/widgets"]
#: the same, as workflow file names (a workflow must end .yml or .yaml)
WORKFLOW_TRICKS = TRICKS + [
    f"{t}.yml" for t in ("..", "../x", "%2e%2e", "%2e%2e%2fx", "a?b", "a#b", "a%2fb", "/x")
]
NUMBER_TRICKS: list[Any] = [
    "1",
    "1/../../merge",
    "..",
    "%31",
    "1?x=1",
    "1#x",
    "",
    0,
    -1,
    1.5,
    True,
    None,
]


#: ref arguments sent as one path segment (a `/` in them encoded too), not one per `/`
ONE_SEGMENT = {"get_commit": "sha", "get_release_by_tag": "tag", "get_repository_tree": "tree_sha"}


def _encoded(value: str, whole: bool = False) -> str:
    if whole:
        return quote(value, safe="")
    return "/".join(quote(part, safe="") for part in value.split("/"))


def _allowed(tool: str, arguments: dict[str, Any]) -> list[re.Pattern[str]]:
    """The tool's own requests with these arguments, exactly."""
    found = []
    for endpoint in ENDPOINTS[tool]:
        method, _, path = endpoint.partition(" ")
        pattern = re.escape(path).replace(r"\*", "[0-9a-f]+")
        for name, value in arguments.items():
            token = re.escape("{" + name + "}")
            if token in pattern:
                whole = ONE_SEGMENT.get(tool) == name
                pattern = pattern.replace(token, re.escape(_encoded(str(value), whole)))
        found.append(re.compile(f"^{method} {re.escape(BASE)}{pattern}$"))
    return found


def _kinds(tool: str) -> dict[str, str]:
    extra = {name: kind for (t, name), kind in EXTRA_KINDS.items() if t == tool}
    return {**PATH_ARGUMENTS.get(tool, {}), **extra}


def _cases() -> list[tuple[str, str, Any]]:
    cases: list[tuple[str, str, Any]] = []
    for tool in set(TOOL_SCHEMAS) - UNSEEN:
        for name in ("owner", "repo"):
            cases += [(tool, name, trick) for trick in NAME_TRICKS]
        for name, kind in _kinds(tool).items():
            tricks = {"number": NUMBER_TRICKS, "workflow": WORKFLOW_TRICKS}.get(kind, TRICKS)
            cases += [(tool, name, trick) for trick in tricks]
        if tool == "push_files":
            cases += [(tool, "files[0].path", trick) for trick in TRICKS]
    return cases


def _with(tool: str, name: str, trick: Any) -> dict[str, Any]:
    arguments = {**REPO, **VALID[tool]}
    if name == "files[0].path":
        arguments["files"] = [{"path": trick, "content": "x"}]
    elif trick is None:
        arguments.pop(name, None)
    else:
        arguments[name] = trick
    return arguments


def _must_refuse(tool: str, name: str, trick: Any) -> bool:
    kind = _kinds(tool).get(name)
    if trick is None and (tool, name) in OPTIONAL:
        return False
    if name in ("owner", "repo") or kind == "number" or not isinstance(trick, str):
        return True  # no trick is a GitHub name; a number is a whole number, never text
    if (tool, name, trick) == ("get_file_contents", "path", "/"):
        return False  # the repository's root
    if (tool, name, trick) == ("actions_list", "resource_id", ""):
        return False  # no workflow named: every run
    parts = trick.split("/")
    return (
        any(part in ("", ".", "..") for part in parts)
        or "\\" in trick
        or any(ord(c) < 0x20 for c in trick)
        or (kind == "workflow" and "/" in trick)
    )


@pytest.mark.slow
@pytest.mark.timeout(300)  # some 1,300 calls over MCP
def test_no_tool_argument_leaves_its_endpoint(broker_env: BrokerEnv) -> None:
    github = broker_env.github
    github.repos.add("acme/widgets", {"README.md": "widgets\n"})
    operator = broker_env.start("operator")
    cases = _cases()
    assert {tool for tool, _, _ in cases} == set(TOOL_SCHEMAS) - UNSEEN
    Seen = tuple[str, bool, list[tuple[str, str]], int]

    async def work(client: ClientSession) -> list[Seen]:
        seen = []
        for tool, name, trick in cases:
            before = len(github.requests)
            result = await client.call_tool(tool, _with(tool, name, trick))
            # the call's own token is minted before it and revoked after it, on the
            # revoking thread (its DELETE may land while the next call runs)
            requests = github.requests[before:]
            minted = sum(1 for r in requests if r.route == "access_tokens")
            sent = [(r.method, r.path) for r in requests if r.route is None]
            seen.append((_text(result), bool(result.is_error), sent, minted))
        return seen

    answers = _mcp(broker_env, operator, work)
    refused = accepted = 0
    for (tool, name, trick), (text, is_error, sent, minted) in zip(cases, answers, strict=True):
        where = (tool, name, trick, text, sent)
        if text.startswith("invalid_argument: "):
            assert is_error, where
            assert text.startswith(f"invalid_argument: argument {name!r}"), where
            assert sent == [], where  # nothing sent
            refused += 1
            continue
        accepted += 1
        assert minted == 1, where  # a token of its own
        allowed = _allowed(tool, _with(tool, name, trick))
        for method, path in sent:
            assert any(p.match(f"{method} {path}") for p in allowed), where
            assert path == BASE or path.startswith(BASE + "/"), where
    # every traversal, empty segment, backslash and control character is refused, and
    # nothing is minted for it
    for (tool, name, trick), (text, _, _, minted) in zip(cases, answers, strict=True):
        if _must_refuse(tool, name, trick):
            assert text.startswith(f"invalid_argument: argument {name!r}"), (tool, name, trick)
            # (an absent optional number a method needs is its executor's to refuse)
            assert trick is None or minted == 0, (tool, name, trick)
    assert refused > 0 and accepted > 0
    # whatever was accepted reached only the tool's endpoints; nothing ever reached these
    paths = [path for _, _, sent, _ in answers for _, path in sent]
    assert f"{BASE}/pulls/1/merge" not in paths  # merge_pull_request got only tricks
    assert not any(p.startswith("/installation") for p in paths)
    climbing = [p for p in paths if any(unquote(s) in (".", "..") for s in p.split("/"))]
    assert climbing == []
    # the encoded forms of the accepted tricks, as sent
    assert f"{BASE}/contents/%252e%252e" in paths
    assert f"{BASE}/contents/a%3Fb%3D1" in paths
    assert f"{BASE}/contents/a%23b" in paths
    assert f"{BASE}/contents/a%252fb" in paths
    assert f"{BASE}/actions/workflows/a%3Fb.yml/runs" in paths

    # each refusal is on the session's audit
    audit = broker_env.rt.audit.entries(operator.id)
    denied = [e for e in audit if e.get("code") == "invalid_argument"]
    assert denied, audit
    assert all(e["kind"] == "tool" and e["result"] == "denied" for e in denied)
    assert all(e.get("message", "").startswith("argument ") for e in denied)


def test_refused_path_is_audited_with_its_argument(broker_env: BrokerEnv) -> None:
    github = broker_env.github
    github.repos.add("acme/widgets", {"README.md": "widgets\n"})
    writer = broker_env.start("writer")
    asked = {
        **REPO,
        "path": "../pulls/1/merge",
        "content": "x",
        "message": "m",
        "branch": "main",
    }

    async def work(client: ClientSession) -> Any:
        return await client.call_tool("create_or_update_file", asked)

    before = len(github.requests)
    result = _mcp(broker_env, writer, work)
    assert result.is_error
    assert _text(result) == (
        "invalid_argument: argument 'path' ('../pulls/1/merge') has a '..' segment: "
        "a path stays in the repository"
    )
    assert github.requests[before:] == []
    entry = broker_env.rt.audit.entries(writer.id)[0]
    assert entry["kind"] == "tool" and entry["result"] == "denied"
    assert entry["code"] == "invalid_argument"
    assert entry["tool"] == "create_or_update_file"
    assert entry["repository"] == "acme/widgets"


def test_a_nested_path_with_a_space_reaches_its_encoded_url(broker_env: BrokerEnv) -> None:
    github = broker_env.github
    github.repos.add("acme/widgets", {"README.md": "widgets\n"})
    writer = broker_env.start("writer")

    async def work(client: ClientSession) -> list[Any]:
        wrote = await client.call_tool(
            "create_or_update_file",
            {**REPO, "path": "docs/a b/readme.md", "content": "spaced\n", "message": "m"}
            | {"branch": "main"},
        )
        branched = await client.call_tool("create_branch", {**REPO, "branch": "feature/a#1"})
        pushed = await client.call_tool(
            "push_files",
            {
                **REPO,
                "branch": "feature/a#1",
                "message": "more",
                "files": [{"path": "docs/a b/more.md", "content": "more\n"}],
            },
        )
        read = await client.call_tool(
            "get_file_contents", {**REPO, "path": "docs/a b/readme.md", "ref": "main"}
        )
        listed = await client.call_tool("get_file_contents", {**REPO, "path": "/"})
        return [wrote, branched, pushed, read, listed]

    before = len(github.requests)
    wrote, branched, pushed, read, _listed = _mcp(broker_env, writer, work)
    for result in (wrote, branched, pushed, read):
        assert not result.is_error, _text(result)
    assert _text(read) == "spaced\n"
    assert github.repos.files("acme/widgets")["docs/a b/readme.md"] == "spaced\n"
    assert github.repos.files("acme/widgets", "feature/a#1")["docs/a b/more.md"] == "more\n"
    sent = [(r.method, r.path) for r in github.requests[before:]]
    assert ("PUT", f"{BASE}/contents/docs/a%20b/readme.md") in sent
    assert ("GET", f"{BASE}/contents/docs/a%20b/readme.md") in sent
    assert ("GET", f"{BASE}/git/ref/heads/feature/a%231") in sent
    assert ("PATCH", f"{BASE}/git/refs/heads/feature/a%231") in sent
    assert ("GET", f"{BASE}/contents") in sent  # `/`: the repository's root
