"""Repositories for the GitHub stand-in: files on branches, issues, comments and pull requests.

The REST routes the GitHub tools hookspawn executes call (a subset of
https://docs.github.com/rest/repos, /issues, /pulls), each checked as GitHub checks it: an
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
Answer = tuple[int, Any]

_REPO = re.compile(r"^/repos/([^/]+)/([^/]+)(/.*)?$")
_LEVELS = {"read": 1, "write": 2, "admin": 3}
_FAMILY = {
    "contents": "contents",
    "branches": "contents",
    "git": "contents",
    "commits": "contents",
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

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: Mapping[str, str], body: Any
    ) -> Answer | None:
        """GitHub's answer to a repository route; None when the path is none of them."""
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
        family = _FAMILY.get(rest.split("/")[0], "metadata")
        if rest.endswith("/check-runs"):
            family = "checks"
        need = 1 if method == "GET" else 2
        if _LEVELS.get(granted.get(family, "none"), 0) < need:
            return 403, {"message": "Resource not accessible by integration"}
        with self._lock:
            return self._route(repo, method, rest, query, headers.get("accept", ""), body or {})

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
        if head == "issues":
            return self._issues(repo, method, tail, body)
        if head == "pulls":
            return _pulls(repo, method, tail, query, accept, body)
        if head == "actions":
            return _actions(repo, method, tail, body)
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

    def _issues(self, repo: _Repo, method: str, tail: list[str], body: dict[str, Any]) -> Answer:
        if not tail:
            if method == "GET":
                return 200, [dict(i) for i in repo.issues]
            if not body.get("title"):
                return 422, {"message": "Validation Failed: title is missing"}
            number = len(repo.issues) + len(repo.pulls) + 1
            issue = {"number": number, "state": "open", "comments": 0, **body}
            repo.issues.append(issue)
            return 201, dict(issue)
        found = next((i for i in repo.issues if str(i["number"]) == tail[0]), None)
        if found is None:
            return 404, {"message": "Not Found"}
        if len(tail) == 1 and method == "GET":
            return 200, dict(found)
        if len(tail) == 1 and method == "PATCH":
            found.update(body)
            return 200, dict(found)
        if tail[1:] == ["comments"] and method == "POST":
            comment = {"id": len(repo.comments) + 1, "issue": found["number"], **body}
            repo.comments.append(comment)
            found["comments"] += 1
            return 201, dict(comment)
        return 404, {"message": "Not Found"}


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
    if tail:
        return 404, {"message": "Not Found"}
    sha: str | None = repo.heads.get(query.get("sha", "main"), query.get("sha"))
    listed = []
    while sha and sha in repo.commits:
        listed.append({"sha": sha, "commit": {"message": repo.commits[sha]["message"]}})
        sha = (repo.commits[sha]["parents"] or [None])[0]
    return 200, listed


def _pull_json(repo: _Repo, pull: dict[str, Any]) -> dict[str, Any]:
    head = pull["head"]
    return {
        **pull,
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
        return 201, _pull_json(repo, pull)
    if rest == ["reviews"] and method == "POST":
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}
        review = {
            "id": len(pull["reviews"]) + 1,
            "state": states.get(str(body.get("event")), "COMMENTED"),
            "body": body.get("body"),
        }
        pull["reviews"].append(review)
        return 200, review
    if rest == ["merge"] and method == "PUT":
        if pull["state"] != "open":
            return 405, {"message": "Pull Request is not mergeable"}
        repo.branches[pull["base"]].update(head)
        sha = repo.commit(pull["base"], str(body.get("commit_title") or "Merge"))
        pull.update(state="closed", merged=True)
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}
    return 404, {"message": "Not Found"}


def _actions(repo: _Repo, method: str, tail: list[str], body: dict[str, Any]) -> Answer:
    if tail == ["runs"] and method == "GET":
        return 200, {"total_count": len(repo.runs), "workflow_runs": list(repo.runs)}
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
