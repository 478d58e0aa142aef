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
from workers.github.client import tls_context

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
        # a log or an artifact answers a redirect to its download URL: the URL is the answer
        follow_redirects=False,
        ssl_verify=tls_context(),
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
        return self._request(method, url, params=query or None, json=json, headers=headers)

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One call to GitHub; a refusal or no answer raised as `GitHubToolFailed`."""
        try:
            response = self.github.request(method, url, **kwargs)
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

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        """GitHub's GraphQL API (`POST /graphql`): its `data`; its `errors` as a refusal."""
        response = self._request(
            "POST", "/graphql", json={"query": query, "variables": dict(variables)}
        )
        body = response.json()
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors or not isinstance(body, dict) or not isinstance(body.get("data"), dict):
            shown = "; ".join(str(e.get("message")) for e in errors or () if isinstance(e, dict))
            raise GitHubToolFailed(f"GraphQL: {shown or 'no data'}", status=200)
        return body["data"]


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


def _bool(args: Args, name: str) -> bool:
    value = args.get(name)
    if value is not None and not isinstance(value, bool):
        raise BadArguments(f"argument {name!r} must be true or false", argument=name)
    return bool(value)


def _strings(args: Args, name: str) -> list[str] | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise BadArguments(f"argument {name!r} must be an array of strings", argument=name)
    return list(value)


def _not_taken(args: Args, *names: str) -> None:
    """Arguments of the GitHub MCP server's schema hookspawn does not execute: refused when
    given, never silently dropped."""
    for name in names:
        if args.get(name) not in (None, False, [], ""):
            raise BadArguments(
                f"argument {name!r} is not one hookspawn executes: leave it out", argument=name
            )


def _fields(found: Any, args: Args) -> Any:
    """`fields`: each listed item cut to those keys (all of them when absent)."""
    wanted = _strings(args, "fields")
    if not wanted or not isinstance(found, list):
        return found
    return [
        {k: v for k, v in item.items() if k in wanted} if isinstance(item, dict) else item
        for item in found
    ]


def _method(args: Args) -> str:
    return _str(args, "method")


def _ref(args: Args, name: str) -> str:
    """A ref-like argument sent as one path segment (a sha, a tag, a branch): git's rules."""
    return "/".join(branch_segments(args.get(name), name))


# contents ----------------------------------------------------------------------------------


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
    return _fields(found, args)


def list_branches(call: _Call, args: Args) -> Any:
    return call.json("GET", ("branches",), params=_pages(args))


def list_commits(call: _Call, args: Args) -> Any:
    params = {**_pick(args, "sha", "author", "path", "since", "until"), **_pages(args)}
    return _fields(call.json("GET", ("commits",), params=params), args)


def get_commit(call: _Call, args: Args) -> Any:
    detail = args.get("detail") or "stats"
    if detail not in ("none", "stats", "full_patch"):
        raise BadArguments("argument 'detail' must be none, stats or full_patch", argument="detail")
    found = call.json("GET", ("commits", _ref(args, "sha")), params=_pages(args))
    if isinstance(found, dict) and detail != "full_patch":
        files = found.pop("files", None)
        if detail == "stats" and isinstance(files, list):
            found["files"] = [
                {k: v for k, v in f.items() if k != "patch"} for f in files if isinstance(f, dict)
            ]
    return found


def list_tags(call: _Call, args: Args) -> Any:
    return call.json("GET", ("tags",), params=_pages(args))


def get_tag(call: _Call, args: Args) -> Any:
    """The tag's ref, then its annotated tag object when it has one (a lightweight tag: the
    ref)."""
    ref = call.json("GET", ("git", "ref", "tags", *branch_segments(args.get("tag"), "tag")))
    target = ref.get("object") if isinstance(ref, dict) else None
    if isinstance(target, dict) and target.get("type") == "tag":
        return call.json("GET", ("git", "tags", str(target["sha"])))
    return ref


def list_releases(call: _Call, args: Args) -> Any:
    return _fields(call.json("GET", ("releases",), params=_pages(args)), args)


def get_latest_release(call: _Call, args: Args) -> Any:
    return call.json("GET", ("releases", "latest"))


def get_release_by_tag(call: _Call, args: Args) -> Any:
    return call.json("GET", ("releases", "tags", _ref(args, "tag")))


def get_repository_tree(call: _Call, args: Args) -> Any:
    tree = _ref(args, "tree_sha") if args.get("tree_sha") else None
    if tree is None:
        tree = "/".join(_default_branch(call))
    recursive = {"recursive": "1"} if _bool(args, "recursive") else None
    found = call.json("GET", ("git", "trees", tree), params=recursive)
    prefix = _opt_str(args, "path_filter")
    if prefix and isinstance(found, dict) and isinstance(found.get("tree"), list):
        found["tree"] = [e for e in found["tree"] if str(e.get("path", "")).startswith(prefix)]
    return found


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
    _not_taken(args, "allow_symlink_write")
    path = repository_path(args.get("path"), "path")
    body = {
        "message": _str(args, "message"),
        "content": base64.b64encode(_str(args, "content").encode()).decode(),
        "branch": "/".join(branch_segments(args.get("branch"), "branch")),
        **_pick(args, "sha"),
    }
    return call.json("PUT", ("contents", *path), json=body)


def delete_file(call: _Call, args: Args) -> Any:
    """The file's blob sha on the branch first (GitHub's delete needs it), then the delete."""
    path = repository_path(args.get("path"), "path")
    branch = "/".join(branch_segments(args.get("branch"), "branch"))
    found = call.json("GET", ("contents", *path), params={"ref": branch})
    if not isinstance(found, dict) or found.get("type") != "file":
        raise BadArguments(f"{'/'.join(path)} is not a file on {branch}", argument="path")
    body = {"message": _str(args, "message"), "branch": branch, "sha": found["sha"]}
    return call.json("DELETE", ("contents", *path), json=body)


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


# pull requests -----------------------------------------------------------------------------


def _check_runs(call: _Call, number: int) -> Any:
    """The check runs of the pull request's head, with their overall state: reading them
    takes `checks: read` (not commit statuses)."""
    found = call.json("GET", ("commits", "pull", number, "head", "check-runs"))
    runs = list(found.get("check_runs") or [])
    if any(r.get("status") != "completed" for r in runs):
        state = "pending"
    elif all(r.get("conclusion") in ("success", "neutral", "skipped") for r in runs):
        state = "success"
    else:
        state = "failure"
    return {"state": state, "total_count": found.get("total_count", len(runs)), "check_runs": runs}


def pull_request_read(call: _Call, args: Args) -> Any:
    method, number = _method(args), _int(args, "pullNumber")
    if method == "get":
        return call.json("GET", ("pulls", number))
    if method == "get_diff":
        return call.send("GET", ("pulls", number), accept="application/vnd.github.diff").text
    if method in ("get_status", "get_check_runs"):
        return _check_runs(call, number)
    path = {
        "get_files": ("pulls", number, "files"),
        "get_commits": ("pulls", number, "commits"),
        "get_review_comments": ("pulls", number, "comments"),
        "get_reviews": ("pulls", number, "reviews"),
        "get_comments": ("issues", number, "comments"),
    }[method]
    return call.json("GET", path, params=_pages(args))


def get_pull_request(call: _Call, args: Args) -> Any:
    return pull_request_read(call, {**args, "method": "get"})


def get_pull_request_files(call: _Call, args: Args) -> Any:
    return pull_request_read(call, {**args, "method": "get_files"})


def get_pull_request_diff(call: _Call, args: Args) -> Any:
    return pull_request_read(call, {**args, "method": "get_diff"})


def get_pull_request_status(call: _Call, args: Args) -> Any:
    return _check_runs(call, _int(args, "pullNumber"))


def list_pull_requests(call: _Call, args: Args) -> Any:
    params = {**_pick(args, "state", "head", "base", "sort", "direction"), **_pages(args)}
    return _fields(call.json("GET", ("pulls",), params=params), args)


def _request_reviewers(call: _Call, number: int, reviewers: list[str]) -> None:
    users = [r for r in reviewers if "/" not in r]
    teams = [r.partition("/")[2] for r in reviewers if "/" in r]
    body = {"reviewers": users, **({"team_reviewers": teams} if teams else {})}
    call.json("POST", ("pulls", number, "requested_reviewers"), json=body)


def create_pull_request(call: _Call, args: Args) -> Any:
    body = {
        "title": _str(args, "title"),
        "head": _str(args, "head"),
        "base": _str(args, "base"),
        **_pick(args, "body", "draft", "maintainer_can_modify"),
    }
    made = call.json("POST", ("pulls",), json=body)
    reviewers = _strings(args, "reviewers")
    if reviewers:
        _request_reviewers(call, int(made["number"]), reviewers)
        made = call.json("GET", ("pulls", int(made["number"])))
    return made


def update_pull_request(call: _Call, args: Args) -> Any:
    number = _int(args, "pullNumber")
    body = _pick(args, "title", "body", "state", "base", "maintainer_can_modify", "draft")
    updated = call.json("PATCH", ("pulls", number), json=body) if body else None
    reviewers = _strings(args, "reviewers")
    if reviewers:
        _request_reviewers(call, number, reviewers)
        updated = None
    return updated if updated is not None else call.json("GET", ("pulls", number))


def update_pull_request_branch(call: _Call, args: Args) -> Any:
    body = {"expected_head_sha": args["expectedHeadSha"]} if args.get("expectedHeadSha") else {}
    return call.json("PUT", ("pulls", _int(args, "pullNumber"), "update-branch"), json=body)


def _pending_review(call: _Call, number: int) -> int:
    """The id of the pull request's pending review (the token's own; GitHub shows a pending
    review to its author only)."""
    reviews = call.json("GET", ("pulls", number, "reviews"), params={"per_page": 100})
    pending = [r for r in reviews or () if isinstance(r, dict) and r.get("state") == "PENDING"]
    if not pending:
        raise GitHubToolFailed(f"pull request #{number} has no pending review", status=404)
    return int(pending[-1]["id"])


def pull_request_review_write(call: _Call, args: Args) -> Any:
    """`create` (with an `event`: submitted; without: pending), `submit_pending`,
    `delete_pending`; the review threads' methods are GraphQL's and refused."""
    method, number = _method(args), _int(args, "pullNumber")
    if method == "create":
        body = {
            **_pick(args, "body", "event"),
            **({"commit_id": args["commitID"]} if args.get("commitID") else {}),
        }
        return call.json("POST", ("pulls", number, "reviews"), json=body)
    review = _pending_review(call, number)
    if method == "submit_pending":
        body = {"event": _str(args, "event"), **_pick(args, "body")}
        return call.json("POST", ("pulls", number, "reviews", review, "events"), json=body)
    return call.json("DELETE", ("pulls", number, "reviews", review))


def add_reply_to_pull_request_comment(call: _Call, args: Args) -> Any:
    """A reply to a review comment (`body`) and/or a reaction to it (`reaction`)."""
    comment = _int(args, "commentId")
    body, reaction = _opt_str(args, "body"), _opt_str(args, "reaction")
    if not body and not reaction:
        raise BadArguments("give 'body', 'reaction' or both", argument="body")
    answer: dict[str, Any] = {}
    if body:
        number = _opt_int(args, "pullNumber")
        if number is None:
            found = call.json("GET", ("pulls", "comments", comment))
            url = str(found.get("pull_request_url") or "")
            number = whole_number(_as_number(url.rpartition("/")[2]), "pullNumber")
        path: tuple[str | int, ...] = ("pulls", number, "comments", comment, "replies")
        answer["reply"] = call.json("POST", path, json={"body": body})
    if reaction:
        path = ("pulls", "comments", comment, "reactions")
        answer["reaction"] = call.json("POST", path, json={"content": reaction})
    return answer


def request_copilot_review(call: _Call, args: Args) -> Any:
    number = _int(args, "pullNumber")
    _request_reviewers(call, number, ["copilot-pull-request-reviewer[bot]"])
    return {"message": "Copilot review requested", "pullNumber": number}


def merge_pull_request(call: _Call, args: Args) -> Any:
    body = _pick(args, "commit_title", "commit_message", "merge_method")
    return call.json("PUT", ("pulls", _int(args, "pullNumber"), "merge"), json=body)


_AUTO_MERGE = (
    "mutation($id: ID!, $method: PullRequestMergeMethod) {"
    " enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method}) {"
    " pullRequest { number autoMergeRequest { mergeMethod enabledAt } } } }"
)


def enable_pull_request_auto_merge(call: _Call, args: Args) -> Any:
    """GitHub enables auto-merge through GraphQL only: the pull request's node id from REST,
    then the mutation."""
    method = str(args.get("merge_method") or "merge")
    if method not in ("merge", "squash", "rebase"):
        raise BadArguments("argument 'merge_method' must be merge, squash or rebase")
    pull = call.json("GET", ("pulls", _int(args, "pullNumber")))
    variables = {"id": pull["node_id"], "method": method.upper()}
    return call.graphql(_AUTO_MERGE, variables)["enablePullRequestAutoMerge"]


# issues ------------------------------------------------------------------------------------


def issue_read(call: _Call, args: Args) -> Any:
    method, number = _method(args), _int(args, "issue_number")
    if method == "get":
        return call.json("GET", ("issues", number))
    if method == "get_parent":
        return call.json("GET", ("issues", number, "parent"))
    tail = {"get_comments": "comments", "get_sub_issues": "sub_issues", "get_labels": "labels"}
    return call.json("GET", ("issues", number, tail[method]), params=_pages(args))


def get_issue(call: _Call, args: Args) -> Any:
    return issue_read(call, {**args, "method": "get"})


def list_issues(call: _Call, args: Args) -> Any:
    """The GitHub MCP server's arguments (GraphQL's spelling) on GitHub's REST list: `after`
    is the page to read, as the previous answer's `pageInfo.endCursor` gave it."""
    _not_taken(args, "field_filters")
    after = _opt_str(args, "after")
    if after is not None and not after.isdigit():
        raise BadArguments("argument 'after' must be a pageInfo.endCursor", argument="after")
    page = int(after) if after else 1
    per_page = _opt_int(args, "perPage") or 30
    state = str(args.get("state") or "all").lower()
    order = {"CREATED_AT": "created", "UPDATED_AT": "updated", "COMMENTS": "comments"}
    labels = _strings(args, "labels")
    params = {
        "state": state,
        "sort": order.get(str(args.get("orderBy"))),
        "direction": str(args["direction"]).lower() if args.get("direction") else None,
        "since": _opt_str(args, "since"),
        "labels": ",".join(labels) if labels else None,
        "page": page,
        "per_page": per_page,
    }
    found = call.json("GET", ("issues",), params=params)
    issues = _fields(list(found or ()), args)
    more = len(issues) >= per_page
    return {
        "issues": issues,
        "pageInfo": {"hasNextPage": more, "endCursor": str(page + 1) if more else None},
    }


_ISSUE_FIELDS = ("title", "body", "assignees", "labels", "milestone")


def issue_write(call: _Call, args: Args) -> Any:
    _not_taken(args, "issue_fields", "type")
    method = _method(args)
    if method == "create":
        body = {"title": _str(args, "title"), **_pick(args, *_ISSUE_FIELDS[1:])}
        return call.json("POST", ("issues",), json=body)
    body = _pick(args, *_ISSUE_FIELDS, "state", "state_reason")
    duplicate = _opt_int(args, "duplicate_of")
    number = _int(args, "issue_number")
    if body.get("state_reason") == "duplicate" and duplicate is None:
        raise BadArguments(
            "argument 'duplicate_of' is required when state_reason is 'duplicate'",
            argument="duplicate_of",
        )
    updated = call.json("PATCH", ("issues", number), json=body)
    if duplicate is not None:
        text = f"Duplicate of #{duplicate}"
        call.json("POST", ("issues", number, "comments"), json={"body": text})
    return updated


def create_issue(call: _Call, args: Args) -> Any:
    return issue_write(call, {**_pick(args, "title", "body"), "method": "create"})


def update_issue(call: _Call, args: Args) -> Any:
    return issue_write(call, {**args, "method": "update"})


def add_issue_comment(call: _Call, args: Args) -> Any:
    """A comment (`body`) on an issue or a pull request, and/or a reaction (`reaction`) to the
    issue itself or, with `comment_id`, to one of its comments."""
    number = _int(args, "issue_number")
    body, reaction = _opt_str(args, "body"), _opt_str(args, "reaction")
    comment = _opt_int(args, "comment_id")
    if not body and not reaction:
        raise BadArguments("give 'body', 'reaction' or both", argument="body")
    if body and comment is not None:
        raise BadArguments("'comment_id' names a comment to react to: no body with it")
    answer: Any = None
    if body:
        answer = call.json("POST", ("issues", number, "comments"), json={"body": body})
    if reaction:
        path = (
            ("issues", "comments", comment, "reactions")
            if comment is not None
            else ("issues", number, "reactions")
        )
        made = call.json("POST", path, json={"content": reaction})
        answer = made if answer is None else {"comment": answer, "reaction": made}
    return answer


# actions -----------------------------------------------------------------------------------


def _runs_filter(args: Args) -> dict[str, Any]:
    given = args.get("workflow_runs_filter") or {}
    if not isinstance(given, dict):
        raise BadArguments(
            "argument 'workflow_runs_filter' must be an object", argument="workflow_runs_filter"
        )
    return _pick(given, "actor", "branch", "event", "status")


def actions_list(call: _Call, args: Args) -> Any:
    method = _method(args)
    pages = {"page": _opt_int(args, "page"), "per_page": _opt_int(args, "per_page")}
    named = args.get("resource_id")
    if method == "list_workflows":
        return call.json("GET", ("actions", "workflows"), params=pages)
    if method == "list_workflow_runs":
        path: tuple[str | int, ...] = (
            ("actions", "workflows", workflow(named, "resource_id"), "runs")
            if named not in (None, "")
            else ("actions", "runs")
        )
        return call.json("GET", path, params={**_runs_filter(args), **pages})
    run = whole_number(_as_number(named), "resource_id")
    if method == "list_workflow_jobs":
        jobs = args.get("workflow_jobs_filter") or {}
        filtered = _pick(jobs, "filter") if isinstance(jobs, dict) else {}
        return call.json("GET", ("actions", "runs", run, "jobs"), params={**filtered, **pages})
    return call.json("GET", ("actions", "runs", run, "artifacts"), params=pages)


def _as_number(value: object) -> object:
    """A resource id as the GitHub MCP server takes it (a string of digits) or a number."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def _location(call: _Call, path: tuple[str | int, ...]) -> str:
    """Where GitHub redirects a download (a log, an artifact): that URL."""
    response = call.send("GET", path)
    return str(response.headers.get("location") or "")


def actions_get(call: _Call, args: Args) -> Any:
    method = _method(args)
    named = args.get("resource_id")
    if method == "get_workflow":
        return call.json(
            "GET", ("actions", "workflows", workflow(_as_number(named), "resource_id"))
        )
    number = whole_number(_as_number(named), "resource_id")
    if method == "get_workflow_run":
        return call.json("GET", ("actions", "runs", number))
    if method == "get_workflow_job":
        return call.json("GET", ("actions", "jobs", number))
    if method == "get_workflow_run_usage":
        return call.json("GET", ("actions", "runs", number, "timing"))
    if method == "get_workflow_run_logs_url":
        url = _location(call, ("actions", "runs", number, "logs"))
        return {"run_id": number, "logs_url": url}
    url = _location(call, ("actions", "artifacts", number, "zip"))
    return {"artifact_id": number, "download_url": url}


def list_workflow_runs(call: _Call, args: Args) -> Any:
    named = args.get("workflow_id")
    path: tuple[str | int, ...] = (
        ("actions", "workflows", workflow(named, "workflow_id"), "runs")
        if named is not None
        else ("actions", "runs")
    )
    params = {**_pick(args, "actor", "branch", "event", "status"), **_pages(args)}
    return call.json("GET", path, params=params)


def _rerun(call: _Call, run: int, failed_only: bool) -> dict[str, Any]:
    action = "rerun-failed-jobs" if failed_only else "rerun"
    call.send("POST", ("actions", "runs", run, action))
    what = "failed jobs of the workflow run" if failed_only else "workflow run"
    return {"message": f"The {what} have been queued to re-run", "run_id": run}


def actions_run_trigger(call: _Call, args: Args) -> Any:
    """The reruns only: the gate refuses the server's other methods (`run_workflow`,
    `cancel_workflow_run`, `delete_workflow_run_logs`) before this runs."""
    method = _method(args)
    if method not in ("rerun_workflow_run", "rerun_failed_jobs"):
        raise BadArguments(f"method {method!r}: hookspawn runs only the reruns", argument="method")
    return _rerun(call, _int(args, "run_id"), method == "rerun_failed_jobs")


def rerun_failed_jobs(call: _Call, args: Args) -> Any:
    return _rerun(call, _int(args, "run_id"), True)


def rerun_workflow_run(call: _Call, args: Args) -> Any:
    return _rerun(call, _int(args, "run_id"), False)


def rerun_failed_jobs_for_pr_head(call: _Call, args: Args) -> Any:
    """Every failed run of the pull request's head commit: its failed jobs re-run."""
    pull = call.json("GET", ("pulls", _int(args, "pullNumber")))
    sha = str(pull["head"]["sha"])
    found = call.json("GET", ("actions", "runs"), params={"head_sha": sha, "per_page": 100})
    failed = [
        r
        for r in found.get("workflow_runs") or ()
        if r.get("conclusion") in ("failure", "timed_out", "cancelled", "startup_failure")
    ]
    for run in failed:
        _rerun(call, whole_number(run.get("id"), "run_id"), True)
    return {"head_sha": sha, "rerun": [r["id"] for r in failed]}


# secrets -----------------------------------------------------------------------------------


def actions_secret_list(call: _Call, args: Args) -> Any:
    """The names and timestamps of the repository's secrets; GitHub never answers values."""
    return call.json("GET", ("actions", "secrets"), params=_pages(args))


EXECUTORS: dict[str, Callable[[_Call, Args], Any]] = {
    fn.__name__: fn
    for fn in (
        get_file_contents,
        list_branches,
        list_commits,
        get_commit,
        list_tags,
        get_tag,
        list_releases,
        get_latest_release,
        get_release_by_tag,
        get_repository_tree,
        create_branch,
        create_or_update_file,
        delete_file,
        push_files,
        pull_request_read,
        get_pull_request,
        get_pull_request_files,
        get_pull_request_diff,
        get_pull_request_status,
        list_pull_requests,
        create_pull_request,
        update_pull_request,
        update_pull_request_branch,
        pull_request_review_write,
        add_reply_to_pull_request_comment,
        request_copilot_review,
        merge_pull_request,
        enable_pull_request_auto_merge,
        issue_read,
        get_issue,
        list_issues,
        issue_write,
        create_issue,
        update_issue,
        add_issue_comment,
        actions_list,
        actions_get,
        list_workflow_runs,
        actions_run_trigger,
        rerun_failed_jobs,
        rerun_workflow_run,
        rerun_failed_jobs_for_pr_head,
        actions_secret_list,
    )
}


def run_tool(github: GitHub[Any], tool: str, repository: str, args: Args) -> Any:
    """What GitHub answers `tool` on `repository`: text (a file, a diff) or a JSON document."""
    return EXECUTORS[tool](_Call(github, repository), args)
