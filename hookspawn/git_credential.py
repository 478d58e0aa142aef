"""`git-credential-hookspawn`: git's credential-helper protocol in front of the broker.

Configured per mount (`credential.helper = git-credential-hookspawn --mount-path=/w/rw`,
`credential.useHttpPath = true`), so git names the repository in every request and the helper
names the checkout's mount: one repository mounted twice gets each mount's own credential.
`get` asks the broker for that mount's token (`$HOOKSPAWN_BROKER_URL/git-credential`, bearer
`$HOOKSPAWN_SESSION_CREDENTIAL`) and answers
`username=x-access-token` / `password=…`; `store` and `erase` do nothing, since the token lives
only in git's memory. A refusal is one line on stderr naming the broker's code, plus `quit=1`
so git stops there with it instead of prompting. Nothing is written to disk.
https://git-scm.com/docs/gitcredentials#_custom_helpers
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import IO

import httpx

__all__ = ["main", "parse_request"]

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


def get(asked: Mapping[str, str], environ: Mapping[str, str], mount_path: str | None = None) -> int:
    url = environ.get("HOOKSPAWN_BROKER_URL", "").rstrip("/")
    credential = environ.get("HOOKSPAWN_SESSION_CREDENTIAL", "")
    if not url or not credential:
        return _refuse("HOOKSPAWN_BROKER_URL and HOOKSPAWN_SESSION_CREDENTIAL must both be set")
    body = {key: asked[key] for key in ("protocol", "host", "path") if asked.get(key)}
    if mount_path:
        body["mountPath"] = mount_path
    try:
        response = httpx.post(
            f"{url}/git-credential",
            json=body,
            headers={"Authorization": f"Bearer {credential}"},
            timeout=TIMEOUT,
        )
    except httpx.InvalidURL:
        return _refuse(f"HOOKSPAWN_BROKER_URL is not a usable URL: {url!r}")
    except httpx.HTTPError as exc:
        return _refuse(f"the broker at {url} could not be reached: {type(exc).__name__}")
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            code, said = error.get("code"), error.get("message")
        else:
            code, said = "broker_error", f"unexpected answer from {url}"
        return _refuse(f"HTTP {response.status_code} {code}: {said}")
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
