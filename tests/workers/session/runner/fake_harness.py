#!/usr/bin/env python3
"""A stand-in for `claude` and `codex` (installed under those names first on a session's PATH):
it writes down what it was started with, tries its model endpoint through srt's proxy, then
prints a recorded event stream of the real program (beside it, `<name>.jsonl`).

FAKE_HARNESS_MODE: `success` (the stream, and two lines that show the model key, which the
runner must redact), `refused` (the model endpoint refusing the key, then waiting as the real
program retries), `broken` (an error result, exit status 1). Standard library only: the
session's account runs it with the system's python3, inside the sandbox."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def reach(url: str) -> str:
    """GET `url` through srt's proxy (NO_PROXY ignored): `200`, or why not."""
    for name in ("NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return str(answer.status)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def main() -> int:
    if sys.argv[1:2] == ["--reach"]:  # setup's probe: may it reach the endpoint?
        print(reach(sys.argv[2]))
        return 0
    name = Path(sys.argv[0]).name
    prompt = sys.stdin.read()
    key_variable = "OPENAI_API_KEY" if name == "codex" else "ANTHROPIC_API_KEY"
    key = os.environ.get(key_variable, "")
    base = os.environ.get("ANTHROPIC_BASE_URL", "")
    codex_home = os.environ.get("CODEX_HOME", "")
    config = Path(codex_home, "config.toml") if codex_home else None
    if config is not None and config.exists():
        base = next(
            line.split("=", 1)[1].strip().strip('"')
            for line in config.read_text().splitlines()
            if line.startswith("base_url")
        )
    seen = {
        "name": name,
        "argv": sys.argv[1:],
        "prompt": prompt,
        "keySha256": hashlib.sha256(key.encode()).hexdigest() if key else None,
        "variables": sorted(os.environ),
        "baseUrl": base,
        "codexConfig": config.read_text() if config is not None and config.exists() else None,
        "cwd": os.getcwd(),
        "reach": reach(base) if base else None,
        "user": os.getuid(),
    }
    Path(os.environ["HOME"], "harness-seen.json").write_text(json.dumps(seen))
    mode = os.environ.get("FAKE_HARNESS_MODE", "success")
    if mode == "refused":
        lines = (HERE / "claude-refused.jsonl").read_text().splitlines()
        print(lines[0], flush=True)
        print(lines[1], flush=True)
        time.sleep(600)  # the real program retries for minutes
        return 1
    if mode == "broken":
        print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": True,
                    "result": "Something broke",
                    "num_turns": 1,
                }
            ),
            flush=True,
        )
        return 1
    print(f"debug: using the key {key}", file=sys.stderr, flush=True)
    events = (HERE / f"{name}.jsonl").read_text().splitlines()
    leak = {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": "t0", "content": f"{key_variable}={key}"}
            ]
        },
    }
    if name == "codex":
        leak = {
            "type": "item.completed",
            "item": {"id": "x", "type": "reasoning", "text": f"{key_variable}={key}"},
        }
    print(json.dumps(leak), flush=True)
    for line in events:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
