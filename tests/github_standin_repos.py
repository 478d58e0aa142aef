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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
            repo.heads[branch] = _sha(full_name, branch, *sorted(files))

    def files(self, full_name: str, branch: str = "main") -> dict[str, str]:
        with self._lock:
            return dict(self._repos[full_name.lower()].branches.get(branch, {}))

    def issues(self, full_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(i) for i in self._repos[full_name.lower()].issues]

    def handle(
        self, method: str, path: str, query: dict[str, str], authorization: str, body: Any
    ) -> Answer | None:
        """GitHub's answer to a repository route; None when the path is none of them."""
        found = _REPO.match(path)
        if found is None:
            return None
        owner, name, rest = found.group(1), found.group(2), (found.group(3) or "").lstrip("/")
        full_name = f"{owner}/{name}"
        token = authorization.partition(" ")[2]
        granted = self._permissions_on(full_name, token) if token else None
        with self._lock:
            repo = self._repos.get(full_name.lower())
        if granted is None or repo is None:
            return 404, {"message": "Not Found"}
        family = _FAMILY.get(rest.split("/")[0], "metadata")
        need = 1 if method == "GET" else 2
        if _LEVELS.get(granted.get(family, "none"), 0) < need:
            return 403, {"message": "Resource not accessible by integration"}
        with self._lock:
            return self._route(repo, method, rest, query, body or {})

    def _route(
        self, repo: _Repo, method: str, rest: str, query: dict[str, str], body: dict[str, Any]
    ) -> Answer:
        parts = rest.split("/") if rest else []
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
        if head == "issues":
            return self._issues(repo, method, tail, body)
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
        repo.heads[branch] = _sha(repo.heads[branch], path, text)
        commit = {"sha": repo.heads[branch], "message": body.get("message")}
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
