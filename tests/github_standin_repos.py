"""Repositories for the GitHub stand-in: files on branches, tags, releases, issues, comments,
pull requests and their reviews, Actions runs and secrets' names.

The REST routes the GitHub tools hookspawn executes call (a subset of
https://docs.github.com/rest/repos, /git, /issues, /pulls, /actions), and the one GraphQL
mutation (enabling auto-merge), each checked as GitHub checks it: an
installation token for that repository with the permission the route needs (404 otherwise, as
GitHub hides what a token cannot see). The stand-in hands it every request no route of its own
matches.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

__all__ = ["StandinRepos"]

#: (permissions of a token on a repository by name) → None when the token cannot see it
PermissionsOn = Callable[[str, str], "dict[str, str] | None"]
#: status and body, and any headers (a redirect's location)
Answer = tuple[int, Any] | tuple[int, Any, dict[str, str]]

_REPO = re.compile(r"^/repos/([^/]+)/([^/]+)(/.*)?$")
_LEVELS = {"read": 1, "write": 2, "admin": 3}
_FAMILY = {
    "contents": "contents",
    "branches": "contents",
    "git": "contents",
    "commits": "contents",
    "tags": "contents",
    "releases": "contents",
    "issues": "issues",
    "pulls": "pull_requests",
    "actions": "actions",
}


def _sha(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()


@dataclass
class _Repo:
    full_name: str
    branches: dict[str, dict[str, str]] = field(default_factory=dict)  # branch → path → text
    heads: dict[str, str] = field(default_factory=dict)  # branch → commit sha
    issues: list[dict[str, Any]] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)  # sha → tree, parents
    trees: dict[str, dict[str, str]] = field(default_factory=dict)  # sha → path → text
    runs: list[dict[str, Any]] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)  # tag → commit sha
    releases: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)

    def commit(self, branch: str, message: str) -> str:
        """Record the branch's files as a new commit on it; its sha."""
        files = dict(self.branches[branch])
        tree = _sha("tree", *(f"{k}={v}" for k, v in sorted(files.items())))
        self.trees[tree] = files
        parent = self.heads.get(branch)
        sha = _sha(tree, parent or "", message)
        self.commits[sha] = {
            "tree": tree,
            "parents": [parent] if parent else [],
            "message": message,
        }
        self.heads[branch] = sha
        return sha


class StandinRepos:
    """Repository contents kept in memory; thread-safe."""

    def __init__(self, permissions_on: PermissionsOn) -> None:
        self._permissions_on = permissions_on
        self._repos: dict[str, _Repo] = {}
        self._lock = threading.Lock()

    def add(self, full_name: str, files: dict[str, str], branch: str = "main") -> None:
        with self._lock:
            repo = self._repos.setdefault(full_name.lower(), _Repo(full_name))
            repo.branches[branch] = dict(files)
            repo.commit(branch, "initial")

    def files(self, full_name: str, branch: str = "main") -> dict[str, str]:
        with self._lock:
            return dict(self._repos[full_name.lower()].branches.get(branch, {}))

    def issues(self, full_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(i) for i in self._repos[full_name.lower()].issues]

    def add_issue(self, full_name: str, title: str) -> int:
        """An open issue, as someone opened it on GitHub; its number."""
        with self._lock:
            repo = self._repos[full_name.lower()]
            number = len(repo.issues) + len(repo.pulls) + 1
            repo.issues.append({"number": number, "state": "open", "comments": 0, "title": title})
            return number

    def add_tag(self, full_name: str, tag: str, branch: str = "main") -> None:
        """A lightweight tag at the branch's head."""
        with self._lock:
            repo = self._repos[full_name.lower()]
            repo.tags[tag] = repo.heads[branch]

    def add_release(self, full_name: str, tag: str, name: str) -> None:
        with self._lock:
            repo = self._repos[full_name.lower()]
            number = len(repo.releases) + 1
            repo.releases.append({"id": number, "tag_name": tag, "name": name, "body": ""})

    def add_run(self, full_name: str, workflow: str, branch: str, conclusion: str) -> int:
        """A completed workflow run of `workflow` (ci.yml) on the branch's head; its id."""
        with self._lock:
            repo = self._repos[full_name.lower()]
            number = len(repo.runs) + 1
            run: dict[str, Any] = {
                "id": number,
                "path": f".github/workflows/{workflow}",
                "head_branch": branch,
                "head_sha": repo.heads[branch],
                "event": "push",
                "status": "completed",
                "conclusion": conclusion,
                "run_attempt": 1,
                "rerun": None,
            }
            repo.runs.append(run)
            return number

    def runs(self, full_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._repos[full_name.lower()].runs]

    def add_review_comment(self, full_name: str, pull: int, body: str) -> int:
        """A review comment on the pull request, as a reviewer left it; its id."""
        with self._lock:
            repo = self._repos[full_name.lower()]
            number = 1000 + len(repo.review_comments)
            repo.review_comments.append({"id": number, "pull": pull, "body": body})
            return number

    def review_comments(self, full_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._repos[full_name.lower()].review_comments]

    def reactions(self, full_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._repos[full_name.lower()].reactions]

    def add_secret(self, full_name: str, name: str) -> None:
        with self._lock:
            self._repos[full_name.lower()].secrets.append(name)

    def pull(self, full_name: str, number: int) -> dict[str, Any]:
        with self._lock:
            repo = self._repos[full_name.lower()]
            return dict(next(p for p in repo.pulls if p["number"] == number))

    def comments(self, full_name: str) -> list[dict[str, Any]]:
        """Every comment made on the repository's issues (`issue`: its number)."""
        with self._lock:
            return [dict(c) for c in self._repos[full_name.lower()].comments]

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: Mapping[str, str], body: Any
    ) -> Answer | None:
        """GitHub's answer to a repository route; None when the path is none of them."""
        if path == "/graphql" and method == "POST":
            return self._graphql(headers, body or {})
        found = _REPO.match(path)
        if found is None:
            return None
        owner, name, rest = found.group(1), found.group(2), (found.group(3) or "").lstrip("/")
        full_name = f"{owner}/{name}"
        token = headers.get("authorization", "").partition(" ")[2]
        granted = self._permissions_on(full_name, token) if token else None
        with self._lock:
            repo = self._repos.get(full_name.lower())
        if granted is None or repo is None:
            return 404, {"message": "Not Found"}
        family = _family(repo, rest)
        need = 1 if method == "GET" else 2
        if _LEVELS.get(granted.get(family, "none"), 0) < need:
            return 403, {"message": "Resource not accessible by integration"}
        with self._lock:
            return self._route(repo, method, rest, query, headers.get("accept", ""), body or {})

    def _graphql(self, headers: Mapping[str, str], body: dict[str, Any]) -> Answer:
        """The one mutation hookspawn sends: enablePullRequestAutoMerge, on a pull request by
        its node id (`PR_<owner>/<name>#<number>`), which takes contents and pull requests at
        write, as merging does."""
        query = str(body.get("query", ""))
        variables = body.get("variables") or {}
        if "enablePullRequestAutoMerge" not in query:
            return 200, {"errors": [{"message": "only enablePullRequestAutoMerge is answered"}]}
        node = str(variables.get("id", ""))
        full_name, _, number = node.removeprefix("PR_").rpartition("#")
        token = headers.get("authorization", "").partition(" ")[2]
        granted = self._permissions_on(full_name, token) if token and full_name else None
        with self._lock:
            repo = self._repos.get(full_name.lower())
            pull = (
                next((p for p in repo.pulls if str(p["number"]) == number), None) if repo else None
            )
            if granted is None or pull is None:
                message = f"Could not resolve to a node with the global id of '{node}'"
                return 200, {"data": None, "errors": [{"message": message}]}
            if any(
                _LEVELS.get(granted.get(p, "none"), 0) < 2 for p in ("contents", "pull_requests")
            ):
                return 200, {"errors": [{"message": "Resource not accessible by integration"}]}
            auto = {"mergeMethod": variables.get("method"), "enabledAt": "2026-01-01T00:00:00Z"}
            pull["auto_merge"] = auto
            answer = {"pullRequest": {"number": pull["number"], "autoMergeRequest": auto}}
            return 200, {"data": {"enablePullRequestAutoMerge": answer}}

    def _route(
        self,
        repo: _Repo,
        method: str,
        rest: str,
        query: dict[str, str],
        accept: str,
        body: dict[str, Any],
    ) -> Answer:
        # each segment decoded by itself, as GitHub reads a path (`docs/a%20b` is `docs/a b`)
        parts = [unquote(part) for part in rest.split("/")] if rest else []
        if not parts:
            return 200, {"full_name": repo.full_name, "default_branch": "main"}
        head, *tail = parts
        if head == "contents":
            return self._contents(repo, method, "/".join(tail), query, body)
        if head == "branches" and method == "GET":
            return 200, [
                {"name": b, "commit": {"sha": repo.heads[b]}} for b in sorted(repo.branches)
            ]
        if head == "git" and tail[:2] == ["ref", "heads"] and method == "GET":
            branch = "/".join(tail[2:])
            if branch not in repo.heads:
                return 404, {"message": "Not Found"}
            return 200, {"ref": f"refs/heads/{branch}", "object": {"sha": repo.heads[branch]}}
        if head == "git" and tail == ["refs"] and method == "POST":
            return self._create_ref(repo, body)
        if head == "git":
            return _git_data(repo, method, tail, body)
        if head == "commits":
            return _commits(repo, tail, query)
        if head in ("tags", "releases"):
            return _tags_and_releases(repo, head, tail)
        if head == "issues":
            return self._issues(repo, method, tail, query, body)
        if head == "pulls" and tail[:1] == ["comments"]:
            return _review_comment(repo, method, tail[1:], body)
        if head == "pulls":
            return _pulls(repo, method, tail, query, accept, body)
        if head == "actions":
            return _actions(repo, method, tail, query, body)
        return 404, {"message": "Not Found"}

    def _contents(
        self, repo: _Repo, method: str, path: str, query: dict[str, str], body: dict[str, Any]
    ) -> Answer:
        if method == "GET":
            files = repo.branches.get(query.get("ref", "main").removeprefix("refs/heads/"))
            if files is None or path not in files:
                return 404, {"message": "Not Found"}
            content = base64.b64encode(files[path].encode()).decode()
            return 200, {
                "type": "file",
                "path": path,
                "encoding": "base64",
                "content": content,
                "sha": _sha(files[path]),
            }
        branch = str(body.get("branch") or "main")
        files = repo.branches.get(branch)
        if files is None:
            return 404, {"message": f"Branch {branch} not found"}
        if method == "DELETE":
            if path not in files or body.get("sha") != _sha(files[path]):
                return 422 if path in files else 404, {"message": f"{path} sha does not match"}
            del files[path]
            sha = repo.commit(branch, str(body.get("message")))
            return 200, {"content": None, "commit": {"sha": sha, "message": body.get("message")}}
        if path in files and body.get("sha") != _sha(files[path]):
            return 409, {"message": f"{path} does not match the sha given"}
        text = base64.b64decode(str(body.get("content", ""))).decode()
        created = path not in files
        files[path] = text
        commit = {
            "sha": repo.commit(branch, str(body.get("message"))),
            "message": body.get("message"),
        }
        return (201 if created else 200), {
            "content": {"path": path, "sha": _sha(text)},
            "commit": commit,
        }

    def _create_ref(self, repo: _Repo, body: dict[str, Any]) -> Answer:
        ref = str(body.get("ref", ""))
        branch = ref.removeprefix("refs/heads/")
        source = next((b for b, sha in repo.heads.items() if sha == body.get("sha")), None)
        if not ref.startswith("refs/heads/") or source is None:
            return 422, {"message": "Reference update failed"}
        if branch in repo.heads:
            return 422, {"message": "Reference already exists"}
        repo.branches[branch] = dict(repo.branches[source])
        repo.heads[branch] = repo.heads[source]
        return 201, {"ref": ref, "object": {"sha": repo.heads[branch]}}

    def _issues(
        self,
        repo: _Repo,
        method: str,
        tail: list[str],
        query: dict[str, str],
        body: dict[str, Any],
    ) -> Answer:
        if not tail:
            if method == "GET":
                state = query.get("state", "open")
                listed = [dict(i) for i in repo.issues if state in ("all", i["state"])]
                start = (int(query.get("page", "1")) - 1) * int(query.get("per_page", "30"))
                return 200, listed[start : start + int(query.get("per_page", "30"))]
            if not body.get("title"):
                return 422, {"message": "Validation Failed: title is missing"}
            number = len(repo.issues) + len(repo.pulls) + 1
            issue = {"number": number, "state": "open", "comments": 0, **body}
            repo.issues.append(issue)
            return 201, dict(issue)
        if tail[:1] == ["comments"] and tail[2:] == ["reactions"] and method == "POST":
            reaction = {"id": len(repo.reactions) + 1, "issue_comment": int(tail[1]), **body}
            repo.reactions.append(reaction)
            return 201, reaction
        found = next((i for i in repo.issues if str(i["number"]) == tail[0]), None)
        pull = next((p for p in repo.pulls if str(p["number"]) == tail[0]), None)
        if found is None and pull is not None and tail[1:] == ["comments"]:
            return self._comments(repo, pull["number"], method, body, pull)
        if found is None:
            return 404, {"message": "Not Found"}
        rest = tail[1:]
        if not rest and method == "GET":
            return 200, dict(found)
        if not rest and method == "PATCH":
            found.update(body)
            return 200, dict(found)
        if rest == ["comments"]:
            return self._comments(repo, found["number"], method, body, found)
        if rest == ["labels"] and method == "GET":
            return 200, [{"name": n} for n in found.get("labels") or []]
        if rest == ["sub_issues"] and method == "GET":
            return 200, []
        if rest == ["reactions"] and method == "POST":
            reaction = {"id": len(repo.reactions) + 1, "issue": found["number"], **body}
            repo.reactions.append(reaction)
            return 201, reaction
        return 404, {"message": "Not Found"}

    def _comments(
        self, repo: _Repo, number: int, method: str, body: dict[str, Any], item: dict[str, Any]
    ) -> Answer:
        """An issue's (or a pull request's) comments: list them, or add one."""
        if method == "GET":
            return 200, [dict(c) for c in repo.comments if c["issue"] == number]
        comment = {"id": len(repo.comments) + 1, "issue": number, **body}
        repo.comments.append(comment)
        item["comments"] = item.get("comments", 0) + 1
        return 201, dict(comment)


def _family(repo: _Repo, rest: str) -> str:
    """The permission a route takes: its family's; check runs `checks`, Actions secrets
    `secrets`, and an issue's comments on a pull request `pull_requests` as well (GitHub takes
    either there: the stand-in answers the pull request's)."""
    parts = rest.split("/")
    if rest.endswith("/check-runs"):
        return "checks"
    if parts[:2] == ["actions", "secrets"]:
        return "secrets"
    on_pull = any(str(p["number"]) == parts[1:2][0] for p in repo.pulls) if parts[1:2] else False
    if parts[0] == "issues" and parts[2:3] == ["comments"] and on_pull:
        return "pull_requests"
    return _FAMILY.get(parts[0], "metadata")


def _git_data(repo: _Repo, method: str, tail: list[str], body: dict[str, Any]) -> Answer:
    """Commits, trees and moving a branch: what `push_files` does in one commit."""
    if tail[:1] == ["commits"] and method == "GET" and len(tail) == 2:
        found = repo.commits.get(tail[1])
        if found is None:
            return 404, {"message": "Not Found"}
        return 200, {"sha": tail[1], "tree": {"sha": found["tree"]}, "message": found["message"]}
    if tail == ["trees"] and method == "POST":
        files = dict(repo.trees.get(str(body.get("base_tree")), {}))
        for item in body.get("tree") or []:
            files[str(item["path"])] = str(item.get("content", ""))
        sha = _sha("tree", *(f"{k}={v}" for k, v in sorted(files.items())))
        repo.trees[sha] = files
        return 201, {"sha": sha}
    if tail == ["commits"] and method == "POST":
        if body.get("tree") not in repo.trees:
            return 422, {"message": "Tree not found"}
        parents = [str(p) for p in body.get("parents") or []]
        sha = _sha(str(body["tree"]), *parents, str(body.get("message")))
        repo.commits[sha] = {"tree": body["tree"], "parents": parents, "message": body["message"]}
        return 201, {"sha": sha, "tree": {"sha": body["tree"]}}
    if tail[:2] == ["ref", "tags"] and method == "GET":
        tag = "/".join(tail[2:])
        if tag not in repo.tags:
            return 404, {"message": "Not Found"}
        target = {"type": "commit", "sha": repo.tags[tag]}
        return 200, {"ref": f"refs/tags/{tag}", "object": target}
    if tail[:1] == ["trees"] and method == "GET" and len(tail) == 2:
        sha = repo.heads.get(tail[1]) or repo.tags.get(tail[1]) or tail[1]
        found = repo.commits.get(sha)
        tree = found["tree"] if found else sha
        if tree not in repo.trees:
            return 404, {"message": "Not Found"}
        entries = [
            {"path": path, "type": "blob", "sha": _sha(text)}
            for path, text in sorted(repo.trees[tree].items())
        ]
        return 200, {"sha": tree, "tree": entries, "truncated": False}
    if tail[:2] == ["refs", "heads"] and method == "PATCH":
        branch, sha = "/".join(tail[2:]), str(body.get("sha"))
        if branch not in repo.heads or sha not in repo.commits:
            return 422, {"message": "Reference update failed"}
        if repo.heads[branch] not in repo.commits[sha]["parents"] and not body.get("force"):
            return 422, {"message": "Update is not a fast forward"}
        repo.heads[branch] = sha
        repo.branches[branch] = dict(repo.trees[repo.commits[sha]["tree"]])
        return 200, {"ref": f"refs/heads/{branch}", "object": {"sha": sha}}
    return 404, {"message": "Not Found"}


def _commits(repo: _Repo, tail: list[str], query: dict[str, str]) -> Answer:
    if tail[-1:] == ["check-runs"]:
        return 200, {"total_count": 0, "check_runs": []}
    if len(tail) == 1:
        named = repo.heads.get(tail[0], tail[0])
        found = repo.commits.get(named)
        if found is None:
            return 404, {"message": f"No commit found for SHA: {tail[0]}"}
        parents = found["parents"]
        before = repo.trees[repo.commits[parents[0]]["tree"]] if parents else {}
        after = repo.trees[found["tree"]]
        changed = sorted(p for p in {*before, *after} if before.get(p) != after.get(p))
        files = [
            {"filename": p, "status": "modified", "patch": f"+{after.get(p, '')}"} for p in changed
        ]
        return 200, {"sha": named, "commit": {"message": found["message"]}, "files": files}
    if tail:
        return 404, {"message": "Not Found"}
    sha: str | None = repo.heads.get(query.get("sha", "main"), query.get("sha"))
    listed = []
    while sha and sha in repo.commits:
        listed.append({"sha": sha, "commit": {"message": repo.commits[sha]["message"]}})
        sha = (repo.commits[sha]["parents"] or [None])[0]
    return 200, listed


def _tags_and_releases(repo: _Repo, head: str, tail: list[str]) -> Answer:
    if head == "tags" and not tail:
        return 200, [{"name": t, "commit": {"sha": sha}} for t, sha in sorted(repo.tags.items())]
    if head == "releases" and not tail:
        return 200, [dict(r) for r in reversed(repo.releases)]
    if tail == ["latest"] and repo.releases:
        return 200, dict(repo.releases[-1])
    if tail[:1] == ["tags"] and len(tail) == 2:
        found = next((r for r in repo.releases if r["tag_name"] == tail[1]), None)
        if found is not None:
            return 200, dict(found)
    return 404, {"message": "Not Found"}


def _review_comment(repo: _Repo, method: str, tail: list[str], body: dict[str, Any]) -> Answer:
    """`pulls/comments/{id}` and its reactions."""
    found = next((c for c in repo.review_comments if tail and str(c["id"]) == tail[0]), None)
    if found is None:
        return 404, {"message": "Not Found"}
    if len(tail) == 1 and method == "GET":
        url = f"https://api.github.com/repos/{repo.full_name}/pulls/{found['pull']}"
        return 200, {**found, "pull_request_url": url}
    if tail[1:] == ["reactions"] and method == "POST":
        reaction = {"id": len(repo.reactions) + 1, "comment": found["id"], **body}
        repo.reactions.append(reaction)
        return 201, reaction
    return 404, {"message": "Not Found"}


def _pull_json(repo: _Repo, pull: dict[str, Any]) -> dict[str, Any]:
    head = pull["head"]
    return {
        **pull,
        "node_id": f"PR_{repo.full_name}#{pull['number']}",
        "head": {"ref": head, "sha": repo.heads.get(head)},
        "base": {"ref": pull["base"]},
    }


def _pulls(
    repo: _Repo,
    method: str,
    tail: list[str],
    query: dict[str, str],
    accept: str,
    body: dict[str, Any],
) -> Answer:
    if not tail:
        if method == "GET":
            state = query.get("state", "open")
            return 200, [_pull_json(repo, p) for p in repo.pulls if state in ("all", p["state"])]
        if body.get("head") not in repo.heads or body.get("base") not in repo.heads:
            return 422, {"message": "Validation Failed: head or base is not a branch"}
        number = len(repo.issues) + len(repo.pulls) + 1
        made = {"number": number, "state": "open", "merged": False, "reviews": [], **body}
        repo.pulls.append(made)
        return 201, _pull_json(repo, made)
    pull = next((p for p in repo.pulls if str(p["number"]) == tail[0]), None)
    if pull is None:
        return 404, {"message": "Not Found"}
    base, head = repo.branches[pull["base"]], repo.branches[pull["head"]]
    changed = sorted(p for p in {*base, *head} if base.get(p) != head.get(p))
    rest = tail[1:]
    if not rest and method == "GET":
        if accept == "application/vnd.github.diff":
            return 200, "".join(f"diff --git a/{p} b/{p}\n+{head.get(p, '')}" for p in changed)
        return 200, _pull_json(repo, pull)
    if not rest and method == "PATCH":
        pull.update(body)
        return 200, _pull_json(repo, pull)
    if rest == ["files"]:
        return 200, [
            {"filename": p, "status": "modified" if p in base else "added"} for p in changed
        ]
    if rest == ["requested_reviewers"] and method == "POST":
        pull["requested_reviewers"] = [{"login": r} for r in body.get("reviewers") or []]
        pull["requested_teams"] = [{"slug": t} for t in body.get("team_reviewers") or []]
        return 201, _pull_json(repo, pull)
    if rest in (["commits"], ["comments"], ["reviews"], ["update-branch"]) or rest[:1] == [
        "reviews"
    ]:
        return _pull_more(repo, pull, method, rest, body)
    if rest[:1] == ["comments"] and rest[2:] == ["replies"] and method == "POST":
        replied = next((c for c in repo.review_comments if str(c["id"]) == rest[1]), None)
        if replied is None or replied["pull"] != pull["number"]:
            return 404, {"message": "Not Found"}
        reply = {
            "id": 1000 + len(repo.review_comments),
            "pull": pull["number"],
            "in_reply_to_id": replied["id"],
            **body,
        }
        repo.review_comments.append(reply)
        return 201, dict(reply)
    if rest == ["merge"] and method == "PUT":
        if pull["state"] != "open":
            return 405, {"message": "Pull Request is not mergeable"}
        repo.branches[pull["base"]].update(head)
        sha = repo.commit(pull["base"], str(body.get("commit_title") or "Merge"))
        pull.update(state="closed", merged=True)
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}
    return 404, {"message": "Not Found"}


def _pull_more(
    repo: _Repo, pull: dict[str, Any], method: str, rest: list[str], body: dict[str, Any]
) -> Answer:
    """A pull request's commits, review comments, reviews (pending ones too), branch update."""
    if rest == ["commits"] and method == "GET":
        sha, listed = repo.heads.get(pull["head"]), []
        base = set()
        walk = repo.heads.get(pull["base"])
        while walk:
            base.add(walk)
            walk = (repo.commits[walk]["parents"] or [None])[0]
        while sha and sha not in base:
            listed.append({"sha": sha, "commit": {"message": repo.commits[sha]["message"]}})
            sha = (repo.commits[sha]["parents"] or [None])[0]
        return 200, listed[::-1]
    if rest == ["comments"] and method == "GET":
        return 200, [dict(c) for c in repo.review_comments if c["pull"] == pull["number"]]
    if rest == ["reviews"] and method == "GET":
        return 200, [dict(r) for r in pull["reviews"]]
    if rest == ["reviews"] and method == "POST":
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}
        event = body.get("event")
        made = {
            "id": len(pull["reviews"]) + 1,
            "state": states.get(str(event), "COMMENTED") if event else "PENDING",
            "body": body.get("body"),
        }
        pull["reviews"].append(made)
        return 200, dict(made)
    review: dict[str, Any] | None = next(
        (r for r in pull["reviews"] if rest[1:2] == [str(r["id"])]), None
    )
    if review is not None and rest[2:] == ["events"] and method == "POST":
        if review["state"] != "PENDING":
            return 422, {"message": "Can not submit a review that is not pending"}
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}
        review.update(state=states.get(str(body.get("event")), "COMMENTED"), body=body.get("body"))
        return 200, dict(review)
    if review is not None and len(rest) == 2 and method == "DELETE":
        if review["state"] != "PENDING":
            return 422, {"message": "Can not delete a review that is not pending"}
        pull["reviews"].remove(review)
        return 200, dict(review)
    if rest == ["update-branch"] and method == "PUT":
        expected = body.get("expected_head_sha")
        if expected and expected != repo.heads.get(pull["head"]):
            return 422, {"message": "expected head sha didn't match current head ref"}
        repo.branches[pull["head"]] = {**repo.branches[pull["base"]], **repo.branches[pull["head"]]}
        repo.commit(pull["head"], f"Merge branch '{pull['base']}' into {pull['head']}")
        return 202, {"message": "Updating pull request branch.", "url": ""}
    return 404, {"message": "Not Found"}


def _actions(
    repo: _Repo, method: str, tail: list[str], query: dict[str, str], body: dict[str, Any]
) -> Answer:
    if tail == ["runs"] and method == "GET":
        runs = [r for r in repo.runs if query.get("head_sha") in (None, r.get("head_sha"))]
        return 200, {"total_count": len(runs), "workflow_runs": runs}
    if tail == ["secrets"] and method == "GET":
        listed = [{"name": n, "created_at": "2026-01-01T00:00:00Z"} for n in repo.secrets]
        return 200, {"total_count": len(listed), "secrets": listed}
    if tail == ["workflows"] and method == "GET":
        names = sorted({r["path"] for r in repo.runs})
        flows = [{"id": n + 1, "path": p, "state": "active"} for n, p in enumerate(names)]
        return 200, {"total_count": len(flows), "workflows": flows}
    if tail[:1] == ["workflows"] and len(tail) == 2 and method == "GET":
        if not any(r["path"].endswith("/" + tail[1]) for r in repo.runs):
            return 404, {"message": "Not Found"}
        return 200, {"path": f".github/workflows/{tail[1]}", "state": "active"}
    if tail[:1] == ["runs"] and len(tail) >= 2:
        return _run(repo, method, tail[1:])
    if tail[:1] == ["jobs"] and len(tail) == 2 and method == "GET":
        return 200, {"id": int(tail[1]), "status": "completed"}
    if tail[:1] == ["artifacts"] and tail[2:] == ["zip"] and method == "GET":
        url = f"https://artifacts.example/{repo.full_name}/{tail[1]}.zip"
        return 302, None, {"location": url}
    if tail[:1] == ["workflows"] and tail[2:] == ["runs"] and method == "GET":
        runs = [r for r in repo.runs if r["path"].endswith(tail[1])]
        return 200, {"total_count": len(runs), "workflow_runs": runs}
    if tail[:1] == ["workflows"] and tail[2:] == ["dispatches"] and method == "POST":
        if body.get("ref") not in repo.heads:
            return 422, {"message": f"No ref found for: {body.get('ref')}"}
        run = {
            "id": len(repo.runs) + 1,
            "path": f".github/workflows/{tail[1]}",
            "head_branch": body["ref"],
            "event": "workflow_dispatch",
            "status": "queued",
        }
        repo.runs.append(run)
        return 204, None
    return 404, {"message": "Not Found"}


def _run(repo: _Repo, method: str, tail: list[str]) -> Answer:
    """One workflow run: read it, its jobs, artifacts, timing and logs, or re-run it."""
    run = next((r for r in repo.runs if str(r["id"]) == tail[0]), None)
    if run is None:
        return 404, {"message": "Not Found"}
    rest = tail[1:]
    if not rest and method == "GET":
        return 200, dict(run)
    if rest == ["jobs"] and method == "GET":
        job = {"id": run["id"] * 10, "status": "completed", "conclusion": run["conclusion"]}
        return 200, {"total_count": 1, "jobs": [job]}
    if rest == ["artifacts"] and method == "GET":
        return 200, {"total_count": 0, "artifacts": []}
    if rest == ["timing"] and method == "GET":
        return 200, {"billable": {}, "run_duration_ms": 1000}
    if rest == ["logs"] and method == "GET":
        url = f"https://logs.example/{repo.full_name}/runs/{run['id']}.zip"
        return 302, None, {"location": url}
    if rest in (["rerun"], ["rerun-failed-jobs"]) and method == "POST":
        if run["status"] != "completed":
            return 403, {"message": "This workflow run is not completed"}
        run.update(status="queued", run_attempt=run["run_attempt"] + 1, rerun=rest[0])
        return 201, {}
    return 404, {"message": "Not Found"}
