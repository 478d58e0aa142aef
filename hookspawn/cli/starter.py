"""`hookspawn init [DIR]`: a starter `.auto` directory that passes `hookspawn check --strict`."""

from __future__ import annotations

import os
from pathlib import Path

from hookspawn.errors import HookspawnError
from hookspawn.schemas import KINDS, schema_text

__all__ = [
    "SCHEMA_DIR",
    "STARTER_FILES",
    "AlreadyThere",
    "modeline",
    "schema_files",
    "write_starter",
]

#: where in a `.auto` tree its files' JSON Schemas are kept (`init`, `schema --write`)
SCHEMA_DIR = ".schema"

#: the repository the starter agents work on until the user names theirs
PLACEHOLDER_REPOSITORY = "your-org/your-repo"

_RUNTIME = """\
# The runtime every starter agent imports: harness and environment in one place.
harness: claude-code
environment:
  name: agent-runtime
  image:
    kind: preset
    name: node24
"""


def _repository_mount(*, ref: str, contents: str) -> str:
    """The runtime import and the one mount both starter agents have: the repository at
    /workspace/repo, `ref` checked out, commenting allowed, `contents` as given (a str.format
    template like the files: `{repository}` is filled in by write_starter)."""
    return f"""\
imports:
  - ../fragments/runtime.yaml
mounts:
  - name: repo
    kind: git
    repository: {{repository}}
    mountPath: /workspace/repo
    ref: {ref}
    auth:
      kind: githubApp
      capabilities:
        contents: {contents}
        pullRequests: write
        issues: write
"""


_PR_REVIEW = (
    """\
# Reviews each opened or updated pull request. It reads the code (contents: read) and comments
# (pullRequests: write, issues: write); it cannot push.
name: pr-review
"""
    + _repository_mount(
        ref="refs/pull/{{{{payload.github.pullRequest.number}}}}/head", contents="read"
    )
    + """\
triggers:
  - kind: github
    name: review
    event: pull_request
    actions: [opened, synchronize, reopened, ready_for_review]
    # anyone can open a pull request on a public repository, and this agent may comment:
    # review only those opened by people who belong to the repository
    filters:
      - {{path: github.pullRequest.authorAssociation, in: [OWNER, MEMBER, COLLABORATOR]}}
    displayTitle: "Review #{{{{ github.pullRequest.number }}}}"
    initialPrompt: |
      Review pull request {{{{ github.pullRequest.htmlUrl }}}}.
      Leave inline comments for concrete problems and one summary review.
systemPrompt: |
  You review pull requests. You cannot push; comment instead.
"""
)

_COMMENT_COMMAND = (
    """\
# Answers "/agent ..." comments on issues and pull requests, from people who belong to the
# repository only: anyone can comment on a public repository.
name: comment-command
"""
    + _repository_mount(ref="main", contents="write")
    + """\
triggers:
  - kind: github
    name: agent-comment
    event: issue_comment
    actions: [created]
    filters:
      - {{path: github.comment.body, matches: "^/agent\\\\b"}}
      - {{path: github.comment.authorAssociation, in: [OWNER, MEMBER, COLLABORATOR]}}
    displayTitle: "/agent on #{{{{ github.issue.number }}}}"
    initialPrompt: |
      {{{{ github.sender.login }}}} asked on {{{{ github.issue.htmlUrl }}}}:

      {{{{ github.comment.body }}}}

      Do what the comment asks; open a pull request for any change.
systemPrompt: |
  You act on requests left in comments, in small reviewed pull requests.
"""
)

#: path under the .auto directory → text (a str.format template: `{repository}` is filled in)
STARTER_FILES = {
    "fragments/runtime.yaml": _RUNTIME,
    "agents/pr-review.yaml": _PR_REVIEW,
    "agents/comment-command.yaml": _COMMENT_COMMAND,
}


def modeline(relative: Path) -> str:
    """The first line of a starter file: where editors (yaml-language-server) find its schema,
    the agent schema for agents/, the fragment schema for the rest, as a path relative to the
    file into the `.auto` tree's own copy (SCHEMA_DIR), so it holds wherever the tree goes."""
    kind = "agent" if relative.parts[0] == "agents" else "fragment"
    target = os.path.relpath(Path(SCHEMA_DIR, f"{kind}.json"), relative.parent)
    return f"# yaml-language-server: $schema={Path(target).as_posix()}\n"


def schema_files(directory: Path) -> dict[Path, str]:
    """The `.auto` tree's copies of the schemas: path → text."""
    return {directory / SCHEMA_DIR / f"{kind}.json": schema_text(kind) for kind in KINDS}


class AlreadyThere(HookspawnError, FileExistsError):
    """A file `init` would write exists; nothing was written."""


def write_starter(directory: Path, *, repository: str = PLACEHOLDER_REPOSITORY) -> list[Path]:
    """Write the starter files under `directory` (created as needed); the paths written.

    Refuses (AlreadyThere, before writing anything) when any of them exists."""
    targets = {
        directory / name: modeline(Path(name)) + text.format(repository=repository)
        for name, text in STARTER_FILES.items()
    } | schema_files(directory)
    for path in targets:
        if path.exists() or path.is_symlink():
            raise AlreadyThere(f"{path} already exists; init writes only new files")
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
    return list(targets)
