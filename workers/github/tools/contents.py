"""The contents tools: files, branches, commits, tags, releases, the tree; writing files and
branches."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from agents.github_tool_arguments import InvalidToolArgument, branch_segments, repository_path
from workers.github.tools.arguments import (
    Args,
    BadArguments,
    flag,
    not_taken,
    only_fields,
    optional_str,
    pages,
    passed,
    ref_segment,
    required_str,
)
from workers.github.tools.request import GitHubToolFailed, ToolCall


def get_file_contents(call: ToolCall, args: Args) -> Any:
    named = args.get("path")
    path = repository_path("/" if named is None else named, "path", directory=True)
    ref = optional_str(args, "sha") or optional_str(args, "ref")
    found = call.json("GET", ("contents", *path), params={"ref": ref})
    if isinstance(found, dict) and found.get("type") == "file" and "content" in found:
        try:
            raw = base64.b64decode(str(found["content"]))
            return raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return found  # not text: GitHub's document, content base64 as GitHub sent it
    return only_fields(found, args)


def list_branches(call: ToolCall, args: Args) -> Any:
    return call.json("GET", ("branches",), params=pages(args))


def list_commits(call: ToolCall, args: Args) -> Any:
    params = {**passed(args, "sha", "author", "path", "since", "until"), **pages(args)}
    return only_fields(call.json("GET", ("commits",), params=params), args)


def get_commit(call: ToolCall, args: Args) -> Any:
    detail = args.get("detail") or "stats"
    if detail not in ("none", "stats", "full_patch"):
        raise BadArguments("argument 'detail' must be none, stats or full_patch", argument="detail")
    found = call.json("GET", ("commits", ref_segment(args, "sha")), params=pages(args))
    if isinstance(found, dict) and detail != "full_patch":
        files = found.pop("files", None)
        if detail == "stats" and isinstance(files, list):
            found["files"] = [
                {k: v for k, v in f.items() if k != "patch"} for f in files if isinstance(f, dict)
            ]
    return found


def list_tags(call: ToolCall, args: Args) -> Any:
    return call.json("GET", ("tags",), params=pages(args))


def get_tag(call: ToolCall, args: Args) -> Any:
    """The tag's ref, then its annotated tag object when it has one (a lightweight tag: the
    ref)."""
    ref = call.json("GET", ("git", "ref", "tags", *branch_segments(args.get("tag"), "tag")))
    target = ref.get("object") if isinstance(ref, dict) else None
    if isinstance(target, dict) and target.get("type") == "tag":
        return call.json("GET", ("git", "tags", str(target["sha"])))
    return ref


def list_releases(call: ToolCall, args: Args) -> Any:
    return only_fields(call.json("GET", ("releases",), params=pages(args)), args)


def get_latest_release(call: ToolCall, args: Args) -> Any:
    return call.json("GET", ("releases", "latest"))


def get_release_by_tag(call: ToolCall, args: Args) -> Any:
    return call.json("GET", ("releases", "tags", ref_segment(args, "tag")))


def get_repository_tree(call: ToolCall, args: Args) -> Any:
    tree = ref_segment(args, "tree_sha") if args.get("tree_sha") else None
    if tree is None:
        tree = "/".join(_default_branch(call))
    recursive = {"recursive": "1"} if flag(args, "recursive") else None
    found = call.json("GET", ("git", "trees", tree), params=recursive)
    prefix = optional_str(args, "path_filter")
    if prefix and isinstance(found, dict) and isinstance(found.get("tree"), list):
        found["tree"] = [e for e in found["tree"] if str(e.get("path", "")).startswith(prefix)]
    return found


def _default_branch(call: ToolCall) -> tuple[str, ...]:
    """The repository's default branch, as GitHub names it (checked as an argument is)."""
    name = call.json("GET", ())["default_branch"]
    try:
        return branch_segments(name, "default_branch")
    except InvalidToolArgument as exc:
        raise GitHubToolFailed(f"GitHub answered {exc.message}", status=0) from None


def _head(call: ToolCall, branch: tuple[str, ...]) -> str:
    return str(call.json("GET", ("git", "ref", "heads", *branch))["object"]["sha"])


def create_branch(call: ToolCall, args: Args) -> Any:
    branch = branch_segments(args.get("branch"), "branch")
    source = args.get("from_branch")
    sha = _head(call, branch_segments(source, "from_branch") if source else _default_branch(call))
    ref = "refs/heads/" + "/".join(branch)
    return call.json("POST", ("git", "refs"), json={"ref": ref, "sha": sha})


def create_or_update_file(call: ToolCall, args: Args) -> Any:
    not_taken(args, "allow_symlink_write")
    path = repository_path(args.get("path"), "path")
    body = {
        "message": required_str(args, "message"),
        "content": base64.b64encode(required_str(args, "content").encode()).decode(),
        "branch": "/".join(branch_segments(args.get("branch"), "branch")),
        **passed(args, "sha"),
    }
    return call.json("PUT", ("contents", *path), json=body)


def delete_file(call: ToolCall, args: Args) -> Any:
    """The file's blob sha on the branch first (GitHub's delete needs it), then the delete."""
    path = repository_path(args.get("path"), "path")
    branch = "/".join(branch_segments(args.get("branch"), "branch"))
    found = call.json("GET", ("contents", *path), params={"ref": branch})
    if not isinstance(found, dict) or found.get("type") != "file":
        raise BadArguments(f"{'/'.join(path)} is not a file on {branch}", argument="path")
    body = {"message": required_str(args, "message"), "branch": branch, "sha": found["sha"]}
    return call.json("DELETE", ("contents", *path), json=body)


def push_files(call: ToolCall, args: Args) -> Any:
    """One commit on `branch` with every file: a tree on the head's, a commit, the ref moved."""
    branch = branch_segments(args.get("branch"), "branch")
    message = required_str(args, "message")
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
                "content": required_str(item, "content", default=""),
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
