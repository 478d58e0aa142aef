"""A smart-HTTP git server for tests: `git http-backend` (CGI) behind a threaded http.server.

Serves every bare repository under a root directory (`<root>/owner/name.git`) on 127.0.0.1 and
authorizes each request the way GitHub does for an installation token: HTTP Basic with the
token as password, asked of `permissions_of(repository, token)` (the permissions the token has
on that repository, or None when it has none there). Fetching needs `contents: read`, pushing
`contents: write`, and a push whose new commits touch `.github/workflows/` also needs
`workflows: write` (a pre-receive hook looks at the pushed paths).

    with GitServer(root, permissions_of=standin.permissions_on) as git:
        url = git.url_of("acme/widgets")
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from base64 import b64decode
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = ["GitServer", "PermissionsOf", "make_bare_repository"]

PermissionsOf = Callable[[str, str], Mapping[str, str] | None]

_REPO = re.compile(r"^/(?P<repo>[^/]+/[^/]+?)(?:\.git)?(?P<rest>/.*)$")
_LEVEL = {"read": 1, "write": 2, "admin": 3}

# Refuse a push whose new commits change anything under .github/workflows/ unless the server
# said the token may (HOOKSPAWN_TEST_WORKFLOWS=write in the hook's environment).
PRE_RECEIVE = r"""#!/bin/sh
zero=0000000000000000000000000000000000000000
while read old new ref; do
  [ "$new" = "$zero" ] && continue
  if [ "$old" = "$zero" ]; then range="$new --not --all"; else range="$old..$new"; fi
  changed=$(git log --format= --name-only $range)
  if echo "$changed" | grep -q '^\.github/workflows/'; then
    if [ "$HOOKSPAWN_TEST_WORKFLOWS" != "write" ]; then
      echo "refusing to update $ref: it changes .github/workflows/" \
           "and the token lacks workflows: write" >&2
      exit 1
    fi
  fi
done
exit 0
"""


def make_bare_repository(root: Path, repository: str, files: Mapping[str, str]) -> Path:
    """`<root>/<repository>.git`, a bare repository whose `main` has one commit of `files`."""
    bare = root / f"{repository}.git"
    work = root / ".work" / repository
    env = {**os.environ, **_ISOLATED}
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, env=env)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True, env=env)
    for name, text in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True, env=env)
    subprocess.run([*git, "push", "-q", str(bare), "main"], check=True, env=env)
    shutil.rmtree(work)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(PRE_RECEIVE)
    hook.chmod(0o755)
    return bare


#: no user or system git configuration reaches the git processes tests run
_ISOLATED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
}


class GitServer:
    """The server; use as a context manager. `requests` records (method, path, status)."""

    def __init__(self, root: Path, *, permissions_of: PermissionsOf) -> None:
        self.root = root
        self.permissions_of = permissions_of
        self.requests: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GitServer:
        handler = type("Handler", (_Handler,), {"git": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def url(self) -> str:
        assert self._server is not None, "the git server is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url_of(self, repository: str) -> str:
        return f"{self.url}/{repository}.git"

    def record(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self.requests.append((method, path, status))

    def statuses(self) -> list[int]:
        with self._lock:
            return [status for _, _, status in self.requests]


def _needs(method: str, rest: str, query: str) -> str | None:
    """`contents` level a smart-HTTP request needs, or None when it is no git request."""
    service = dict(p.partition("=")[::2] for p in query.split("&") if p).get("service")
    if method == "GET" and rest == "/info/refs":
        return {"git-upload-pack": "read", "git-receive-pack": "write"}.get(service or "")
    if method == "POST" and rest in ("/git-upload-pack", "/git-receive-pack"):
        return "read" if rest == "/git-upload-pack" else "write"
    return None


class _Handler(BaseHTTPRequestHandler):
    git: GitServer

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _serve(self) -> None:
        split = urlsplit(self.path)
        match = _REPO.match(split.path)
        needs = _needs(self.command, match["rest"], split.query) if match else None
        if match is None or needs is None:
            return self._answer(404, b"not a smart-HTTP git request\n")
        repository = match["repo"]
        if not (self.git.root / f"{repository}.git").is_dir():
            return self._answer(404, f"no repository {repository}\n".encode())
        token = self._token()
        granted = self.git.permissions_of(repository, token) if token else None
        if granted is None:
            return self._answer(
                401, b"authentication required\n", {"WWW-Authenticate": 'Basic realm="git"'}
            )
        if _LEVEL.get(granted.get("contents", ""), 0) < _LEVEL[needs]:
            return self._answer(
                403, f"the token may not {needs} contents of {repository}\n".encode()
            )
        body = self._body()
        self._cgi(repository, match["rest"], split.query, body, granted)

    def _token(self) -> str | None:
        scheme, _, value = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            _user, _, password = b64decode(value).decode().partition(":")
        except ValueError:
            return None
        return password or None

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(
        self, repository: str, rest: str, query: str, body: bytes, granted: Mapping[str, str]
    ) -> None:
        env = {
            **os.environ,
            **_ISOLATED,
            "GIT_PROJECT_ROOT": str(self.git.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": f"/{repository}.git{rest}",
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "HOOKSPAWN_TEST_WORKFLOWS": granted.get("workflows", "none"),
        }
        for header, name in (
            ("Content-Encoding", "HTTP_CONTENT_ENCODING"),
            ("Git-Protocol", "GIT_PROTOCOL"),
        ):
            if self.headers.get(header):
                env[name] = self.headers[header]
        done = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        self._answer(status, payload, headers)

    def _answer(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.git.record(self.command, self.path, status)
        self.send_response(status)
        for name, value in (headers or {}).items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
