"""The demo's `acme/widgets`: a local bare repository the runner fetches through a url rewrite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["PULL_NUMBER", "demo_repository"]

#: the pull request the sample pull_request.opened payload names (refs/pull/2/head)
PULL_NUMBER = 2

_PACKAGE = {"name": "widgets", "version": "1.0.0", "private": True}
_LOCK = {
    "name": "widgets",
    "version": "1.0.0",
    "lockfileVersion": 3,
    "requires": True,
    "packages": {"": {"name": "widgets", "version": "1.0.0"}},
}
_FILES = {
    "README.md": "# widgets\n\nThe demo repository `hookspawn serve --demo` checks out.\n",
    "package.json": json.dumps(_PACKAGE, indent=2) + "\n",
    "package-lock.json": json.dumps(_LOCK, indent=2) + "\n",
    "src/widget.js": "export const widget = () => 'a widget';\n",
}


def _git(cwd: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "Demo",
        "GIT_AUTHOR_EMAIL": "demo@example.com",
        "GIT_COMMITTER_NAME": "Demo",
        "GIT_COMMITTER_EMAIL": "demo@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _hand_to(root: Path, owner: tuple[int, int]) -> None:
    """`root` and everything in it owned by `owner` (uid, gid), links left alone."""
    for path in (root, *root.rglob("*")):
        if not path.is_symlink() and (path.stat().st_uid, path.stat().st_gid) != owner:
            os.chown(path, *owner)


def demo_repository(data_dir: Path, owner: tuple[int, int] | None = None) -> str:
    """Create `<data_dir>/demo-git/acme/widgets.git` once (main, and the sample pull request's
    head at refs/pull/2/head); the HOOKSPAWN_GIT_URL_REWRITE value that serves it.

    `owner` (uid, gid): the account session commands run as, when it is not this process's.
    The repository is handed to it (on every start, so one an earlier demo made is too): a
    session's own git, which runs as that account and, without srt, outside any user namespace,
    refuses a repository another account owns ("detected dubious ownership")."""
    root = (data_dir / "demo-git").absolute()
    bare = root / "acme" / "widgets.git"
    if not (bare / "HEAD").exists():
        work = root / "work"
        shutil.rmtree(work, ignore_errors=True)
        (work / "src").mkdir(parents=True)
        for name, text in _FILES.items():
            (work / name).write_text(text)
        _git(work, "init", "-q", "-b", "main")
        _git(work, "add", ".")
        _git(work, "commit", "-q", "-m", "widgets: the first widget")
        _git(work, "checkout", "-q", "-b", "pull")
        (work / "src" / "gadget.js").write_text("export const gadget = () => 'a gadget';\n")
        _git(work, "add", ".")
        _git(work, "commit", "-q", "-m", "widgets: a gadget beside the widget")
        staging = root / "acme" / ".widgets.git.new"
        shutil.rmtree(staging, ignore_errors=True)
        _git(root, "init", "-q", "--bare", "-b", "main", str(staging))
        _git(work, "push", "-q", str(staging), "main:refs/heads/main")
        _git(work, "push", "-q", str(staging), f"pull:refs/pull/{PULL_NUMBER}/head")
        staging.rename(bare)
        shutil.rmtree(work, ignore_errors=True)
    if owner is not None:
        _hand_to(root, owner)
    return f"https://github.com/=file://{root}/"
