"""`git-credential-hookspawn`: git's credential-helper protocol in front of the broker.

Configured per mount (`credential.helper`, `credential.useHttpPath = true`), so git names the
repository in every request. `get` asks the broker for that mount's token
(`$HOOKSPAWN_BROKER_URL/git-credential`, bearer `$HOOKSPAWN_SESSION_CREDENTIAL`) and answers
`username=x-access-token` / `password=…`; `store` and `erase` do nothing, since the token lives
only in git's memory. A refusal is one line on stderr naming the broker's code, plus `quit=1`
so git stops there with it instead of prompting. Nothing is written to disk.
https://git-scm.com/docs/gitcredentials#_custom_helpers

This file uses the standard library only and imports nothing of hookspawn's: the runner
copies it, as it is, into each session's tools directory, where the system's `python3` runs
it as the session's account (inside the sandbox, through its proxy, as any HTTP client there).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import IO

__all__ = ["NAME", "get", "main", "parse_request"]

NAME = "git-credential-hookspawn"
TIMEOUT = 30.0


def parse_request(stream: IO[str]) -> dict[str, str]:
    """git's `key=value` lines, up to a blank line or the end."""
    found: dict[str, str] = {}
    for line in stream:
        line = line.rstrip("\n")
        if not line:
            break
        key, sep, value = line.partition("=")
        if sep:
            found[key] = value
    return found


def _refuse(message: str) -> int:
    print(f"{NAME}: {message}", file=sys.stderr)
    print("quit=1")  # git stops asking and fails with the line above
    return 1


def _expiry(value: object) -> str | None:
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return str(int(parsed.timestamp()))


def _post(url: str, body: Mapping[str, str], credential: str) -> tuple[int, bytes]:
    """POST `body` as JSON; the status and body of the answer, an error status's included."""
    request = urllib.request.Request(  # noqa: S310 (get allows http(s) urls only)
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def get(asked: Mapping[str, str], environ: Mapping[str, str], mount_path: str | None = None) -> int:
    url = environ.get("HOOKSPAWN_BROKER_URL", "").rstrip("/")
    credential = environ.get("HOOKSPAWN_SESSION_CREDENTIAL", "")
    if not url or not credential:
        return _refuse("HOOKSPAWN_BROKER_URL and HOOKSPAWN_SESSION_CREDENTIAL must both be set")
    if not url.startswith(("http://", "https://")):
        return _refuse(f"HOOKSPAWN_BROKER_URL is not a usable URL: {url!r}")
    body = {key: asked[key] for key in ("protocol", "host", "path") if asked.get(key)}
    if mount_path:
        body["mountPath"] = mount_path  # the checkout's mount: one repository mounted twice
    try:
        status, raw = _post(f"{url}/git-credential", body, credential)
    except (ValueError, http.client.InvalidURL):
        return _refuse(f"HOOKSPAWN_BROKER_URL is not a usable URL: {url!r}")
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        return _refuse(f"the broker at {url} could not be reached: {reason}")
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if status != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            code, said = error.get("code"), error.get("message")
        else:
            code, said = "broker_error", f"unexpected answer from {url}"
        return _refuse(f"HTTP {status} {code}: {said}")
    print(f"username={answer.get('username', 'x-access-token')}")
    print(f"password={answer['password']}")
    expiry = _expiry(answer.get("expiresAt"))
    if expiry:
        print(f"password_expiry_utc={expiry}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    operation = args[-1] if args else ""
    options = [arg.partition("=") for arg in args[:-1]]
    if operation not in ("get", "store", "erase") or any(
        name != "--mount-path" or not value for name, _, value in options
    ):
        print(
            f"usage: {NAME} [--mount-path=PATH] get|store|erase (a git credential helper)",
            file=sys.stderr,
        )
        return 2
    asked = parse_request(sys.stdin)
    if operation != "get":
        return 0  # nothing is kept, so nothing to store or erase
    return get(asked, os.environ, options[-1][2] if options else None)


if __name__ == "__main__":
    sys.exit(main())
