"""The GitHub REST calls behind each GitHub tool hookspawn executes, through githubkit.

One function per tool, each given a githubkit client authenticated by a token scoped to that
one call, the repository and the tool's arguments (named as the GitHub MCP server names them).
Each answers what GitHub answered: decoded text for a file or a diff, else the JSON document.
A refusal by GitHub raises `GitHubToolFailed` with its status and message.

Every path is built from segments, each checked and percent-encoded by itself
(agents.github_tool_arguments): an argument never adds a segment, a query or a fragment of its
own, and never climbs out of the tool's endpoint. githubkit's generated methods paste their
path parameters into the URL as they are, so the encoding is done here, before githubkit and
httpx build the request.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException, RequestFailed

from agents.github_tool_arguments import (
    InvalidToolArgument,
    branch_segments,
    encoded_path,
    repository_name,
    repository_path,
    whole_number,
    workflow,
)
from workers.errors import WorkerError

__all__ = ["EXECUTORS", "BadArguments", "GitHubToolFailed", "run_tool", "token_client"]

Args = Mapping[str, Any]


class GitHubToolFailed(WorkerError):
    """GitHub refused the call (`status`, GitHub's message), or could not be reached (0)."""

    code = "github_error"


class BadArguments(WorkerError):
    """A tool's arguments are not what it takes; names the argument."""

    code = "invalid_argument"


def token_client(token: str, api_url: str, timeout: float = 30.0) -> GitHub[TokenAuthStrategy]:
    """A githubkit client for one installation token (no retries: the agent decides)."""
    return GitHub(
        TokenAuthStrategy(token),
        base_url=api_url,
        timeout=httpx.Timeout(timeout),
        http_cache=False,
        auto_retry=False,
        rest_api_validate_body=False,
    )


class _Call:
    """The repository's REST calls with one client; every failure as GitHubToolFailed."""

    def __init__(self, github: GitHub[Any], repository: str) -> None:
        self.github = github
        owner, _, repo = repository.partition("/")
        self.base = encoded_path(
            "repos", repository_name(owner, "owner"), repository_name(repo, "repo")
        )

    def send(
        self,
        method: str,
        path: tuple[str | int, ...],
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        accept: str | None = None,
    ) -> httpx.Response:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        headers = {"Accept": accept} if accept else None
        try:
            url = self.base + encoded_path(*path)
        except ValueError as exc:  # a value GitHub answered (a sha, a branch) that is no segment
            raise GitHubToolFailed(f"GitHub answered {exc}", status=0) from None
        try:
            response = self.github.request(
                method,
                url,
                params=query or None,
                json=json,
                headers=headers,
            )
        except RequestFailed as exc:
            status = exc.response.status_code
            raise GitHubToolFailed(
                f"{status} {_message(exc.response.raw_response)}", status=status
            ) from None
        except GitHubException as exc:
            raise GitHubToolFailed(
                f"GitHub could not be reached ({type(exc).__name__})", status=0
            ) from None
        return response.raw_response

    def json(self, method: str, path: tuple[str | int, ...], **kwargs: Any) -> Any:
        response = self.send(method, path, **kwargs)
        return response.json() if response.content else None


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase
    return str(body.get("message") or response.reason_phrase) if isinstance(body, dict) else ""


# arguments ---------------------------------------------------------------------------------


def _str(args: Args, name: str, *, default: str | None = None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str) or not value:
        raise BadArguments(f"argument {name!r} must be a non-empty string", argument=name)
    return value


def _opt_str(args: Args, name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadArguments(f"argument {name!r} must be a string", argument=name)
    return value


def _int(args: Args, name: str) -> int:
    return whole_number(args.get(name), name)


def _opt_int(args: Args, name: str) -> int | None:
    return None if args.get(name) is None else _int(args, name)


def _pick(args: Args, *names: str) -> dict[str, Any]:
    """The arguments passed through as they are (JSON-typed by the schema)."""
    return {name: args[name] for name in names if args.get(name) is not None}


def _pages(args: Args) -> dict[str, Any]:
    return {"page": _opt_int(args, "page"), "per_page": _opt_int(args, "perPage")}


# tools -------------------------------------------------------------------------------------


def get_file_contents(call: _Call, args: Args) -> Any:
    named = args.get("path")
    path = repository_path("/" if named is None else named, "path", directory=True)
    ref = _opt_str(args, "sha") or _opt_str(args, "ref")
    found = call.json("GET", ("contents", *path), params={"ref": ref})
    if isinstance(found, dict) and found.get("type") == "file" and "content" in found:
        try:
            raw = base64.b64decode(str(found["content"]))
            return raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return found  # not text: GitHub's document, content base64 as GitHub sent it
    return found


def list_branches(call: _Call, args: Args) -> Any:
    return call.json("GET", ("branches",), params=_pages(args))


def list_commits(call: _Call, args: Args) -> Any:
    params = {"sha": _opt_str(args, "sha"), "author": _opt_str(args, "author"), **_pages(args)}
    return call.json("GET", ("commits",), params=params)


def _default_branch(call: _Call) -> tuple[str, ...]:
    """The repository's default branch, as GitHub names it (checked as an argument is)."""
    name = call.json("GET", ())["default_branch"]
    try:
        return branch_segments(name, "default_branch")
    except InvalidToolArgument as exc:
        raise GitHubToolFailed(f"GitHub answered {exc.message}", status=0) from None


def _head(call: _Call, branch: tuple[str, ...]) -> str:
    return str(call.json("GET", ("git", "ref", "heads", *branch))["object"]["sha"])


def create_branch(call: _Call, args: Args) -> Any:
    branch = branch_segments(args.get("branch"), "branch")
    source = args.get("from_branch")
    sha = _head(call, branch_segments(source, "from_branch") if source else _default_branch(call))
    ref = "refs/heads/" + "/".join(branch)
    return call.json("POST", ("git", "refs"), json={"ref": ref, "sha": sha})


def create_or_update_file(call: _Call, args: Args) -> Any:
    path = repository_path(args.get("path"), "path")
    body = {
        "message": _str(args, "message"),
        "content": base64.b64encode(_str(args, "content").encode()).decode(),
        "branch": "/".join(branch_segments(args.get("branch"), "branch")),
        **_pick(args, "sha"),
    }
    return call.json("PUT", ("contents", *path), json=body)


def push_files(call: _Call, args: Args) -> Any:
    """One commit on `branch` with every file: a tree on the head's, a commit, the ref moved."""
    branch = branch_segments(args.get("branch"), "branch")
    message = _str(args, "message")
    files = args.get("files")
    if not isinstance(files, list) or not files:
        raise BadArguments("argument 'files' must be a non-empty array", argument="files")
    tree = []
    for n, item in enumerate(files):
        if not isinstance(item, dict):
            raise BadArguments(f"files[{n}] must be an object {{path, content}}", argument="files")
        tree.append(
            {
                "path": "/".join(repository_path(item.get("path"), f"files[{n}].path")),
                "mode": "100644",
                "type": "blob",
                "content": _str(item, "content", default=""),
            }
        )
    head = _head(call, branch)
    base_tree = call.json("GET", ("git", "commits", head))["tree"]["sha"]
    new_tree = call.json("POST", ("git", "trees"), json={"base_tree": base_tree, "tree": tree})
    commit = call.json(
        "POST",
        ("git", "commits"),
        json={"message": message, "tree": new_tree["sha"], "parents": [head]},
    )
    return call.json("PATCH", ("git", "refs", "heads", *branch), json={"sha": commit["sha"]})


def get_pull_request(call: _Call, args: Args) -> Any:
    return call.json("GET", ("pulls", _int(args, "pullNumber")))


def list_pull_requests(call: _Call, args: Args) -> Any:
    params = {**_pick(args, "state", "head", "base", "sort", "direction"), **_pages(args)}
    return call.json("GET", ("pulls",), params=params)


def get_pull_request_files(call: _Call, args: Args) -> Any:
    number = _int(args, "pullNumber")
    return call.json("GET", ("pulls", number, "files"), params=_pages(args))


def get_pull_request_diff(call: _Call, args: Args) -> Any:
    number = _int(args, "pullNumber")
    return call.send("GET", ("pulls", number), accept="application/vnd.github.diff").text


def get_pull_request_status(call: _Call, args: Args) -> Any:
    """The check runs of the pull request's head, with their overall state: the tool table
    grants this tool `checks: read`, which reads check runs (not commit statuses)."""
    number = _int(args, "pullNumber")
    found = call.json("GET", ("commits", "pull", number, "head", "check-runs"))
    runs = list(found.get("check_runs") or [])
    if any(r.get("status") != "completed" for r in runs):
        state = "pending"
    elif all(r.get("conclusion") in ("success", "neutral", "skipped") for r in runs):
        state = "success"
    else:
        state = "failure"
    return {"state": state, "total_count": found.get("total_count", len(runs)), "check_runs": runs}


def create_pull_request(call: _Call, args: Args) -> Any:
    body = {
        "title": _str(args, "title"),
        "head": _str(args, "head"),
        "base": _str(args, "base"),
        **_pick(args, "body", "draft", "maintainer_can_modify"),
    }
    return call.json("POST", ("pulls",), json=body)


def update_pull_request(call: _Call, args: Args) -> Any:
    number = _int(args, "pullNumber")
    body = _pick(args, "title", "body", "state", "base", "maintainer_can_modify")
    updated = call.json("PATCH", ("pulls", number), json=body) if body else None
    reviewers = args.get("reviewers")
    if reviewers:
        call.json(
            "POST", ("pulls", number, "requested_reviewers"), json={"reviewers": list(reviewers)}
        )
        updated = call.json("GET", ("pulls", number))
    return updated if updated is not None else call.json("GET", ("pulls", number))


def pull_request_review_write(call: _Call, args: Args) -> Any:
    method = _str(args, "method")
    if method != "create":
        raise BadArguments(
            f"method {method!r}: hookspawn creates and submits reviews (`create`) only",
            argument="method",
        )
    body = {
        **_pick(args, "body", "event"),
        **({"commit_id": args["commitID"]} if args.get("commitID") else {}),
    }
    return call.json("POST", ("pulls", _int(args, "pullNumber"), "reviews"), json=body)


def merge_pull_request(call: _Call, args: Args) -> Any:
    body = _pick(args, "commit_title", "commit_message", "merge_method")
    return call.json("PUT", ("pulls", _int(args, "pullNumber"), "merge"), json=body)


def get_issue(call: _Call, args: Args) -> Any:
    return call.json("GET", ("issues", _int(args, "issue_number")))


def list_issues(call: _Call, args: Args) -> Any:
    labels = args.get("labels")
    params = {
        **_pick(args, "state", "since", "direction"),
        "labels": ",".join(str(x) for x in labels) if labels else None,
        **_pages(args),
    }
    return call.json("GET", ("issues",), params=params)


def create_issue(call: _Call, args: Args) -> Any:
    body = {"title": _str(args, "title"), **_pick(args, "body", "assignees", "labels", "milestone")}
    return call.json("POST", ("issues",), json=body)


def update_issue(call: _Call, args: Args) -> Any:
    body = _pick(args, "title", "body", "state", "labels", "assignees", "milestone")
    return call.json("PATCH", ("issues", _int(args, "issue_number")), json=body)


def add_issue_comment(call: _Call, args: Args) -> Any:
    body = {"body": _str(args, "body")}
    return call.json("POST", ("issues", _int(args, "issue_number"), "comments"), json=body)


def list_workflow_runs(call: _Call, args: Args) -> Any:
    named = args.get("workflow_id")
    path: tuple[str | int, ...] = (
        ("actions", "workflows", workflow(named, "workflow_id"), "runs")
        if named is not None
        else ("actions", "runs")
    )
    params = {**_pick(args, "actor", "branch", "event", "status"), **_pages(args)}
    return call.json("GET", path, params=params)


def run_workflow(call: _Call, args: Args) -> Any:
    named = workflow(args.get("workflow_id"), "workflow_id")
    body = {"ref": _str(args, "ref"), **_pick(args, "inputs")}
    call.send("POST", ("actions", "workflows", named, "dispatches"), json=body)
    return {"message": "Workflow run has been queued", "workflow_id": named, "ref": body["ref"]}


EXECUTORS: dict[str, Callable[[_Call, Args], Any]] = {
    fn.__name__: fn
    for fn in (
        get_file_contents,
        list_branches,
        list_commits,
        create_branch,
        create_or_update_file,
        push_files,
        get_pull_request,
        list_pull_requests,
        get_pull_request_files,
        get_pull_request_diff,
        get_pull_request_status,
        create_pull_request,
        update_pull_request,
        pull_request_review_write,
        merge_pull_request,
        get_issue,
        list_issues,
        create_issue,
        update_issue,
        add_issue_comment,
        list_workflow_runs,
        run_workflow,
    )
}


def run_tool(github: GitHub[Any], tool: str, repository: str, args: Args) -> Any:
    """What GitHub answers `tool` on `repository`: text (a file, a diff) or a JSON document."""
    return EXECUTORS[tool](_Call(github, repository), args)
