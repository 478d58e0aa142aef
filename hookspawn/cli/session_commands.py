"""`hookspawn sessions logs ID [--follow] [--raw]`, `sessions transcript ID [--raw]` and
`sessions cancel ID` (`list` and `show` are hookspawn.cli.client_commands')."""

from __future__ import annotations

import argparse
import json
import sys
import time
from urllib.parse import quote

from hookspawn.cli import client_commands
from hookspawn.cli.client import Server, error_line
from hookspawn.errors import CommandError
from hookspawn.terminal_text import ControlStripper
from triggers.session.harness_events import timeline
from workers.session.status import TERMINAL

__all__ = ["sessions"]

#: how often `--follow` asks for more of the log
_FOLLOW_POLL = 0.5


def sessions(args: argparse.Namespace) -> int:
    """`logs`, `transcript` and `cancel` here; `list` and `show` as before."""
    if args.action not in ("logs", "cancel", "transcript"):
        return client_commands.sessions(args)
    if not args.id:
        raise CommandError(f"{args.action}: a session ID is required", exit_code=2)
    server = client_commands.server_of(args)
    if args.action == "cancel":
        return _cancel(args, server)
    if args.action == "transcript":
        return _transcript(args, server)
    path = f"/sessions/{quote(args.id, safe='')}/log"
    offset = 0
    out = sys.stdout.buffer
    # the log holds what session commands printed: their control sequences never reach the
    # terminal unless --raw asks for the bytes as they are
    stripper = None if args.raw else ControlStripper()
    while True:
        # the bytes as written: the stripper (or --raw) decides what the terminal gets
        response = server.request("GET", path, params={"offset": offset, "raw": "true"})
        if not response.is_success:
            raise CommandError(error_line(response))
        shown = response.content if stripper is None else stripper.feed(response.content).encode()
        out.write(shown)
        out.flush()
        offset = int(response.headers.get("x-log-offset", offset + len(response.content)))
        status = response.headers.get("x-session-status")
        if status is None and offset == 0:
            raise CommandError(
                f"logs: session {args.id} has no run here, so no log: no local runner runs it "
                "(HOOKSPAWN_RUNNER=local runs sessions on this machine)"
            )
        if response.content:
            continue  # there may be more right away
        if not args.follow or status is None or status in TERMINAL:
            if stripper is not None:
                out.write(stripper.end().encode())
                out.flush()
            return 0
        time.sleep(_FOLLOW_POLL)


def _cancel(args: argparse.Namespace, server: Server) -> int:
    """POST /sessions/{id}/cancel: a queued session ends at once, a running one when its
    runner stops it."""
    answer = server.json("POST", f"/sessions/{quote(args.id, safe='')}/cancel")
    if args.json:
        print(json.dumps(answer, indent=2))
    elif answer.get("status") == "cancelled":
        print(f"session {args.id} cancelled")
    else:
        print(f"session {args.id} ({answer.get('status')}): its runner stops it now")
    return 0


def _transcript(args: argparse.Namespace, server: Server) -> int:
    """GET /sessions/{id}/transcript, all of it: the harness's events as a timeline (each tool
    call, tool error, what the model said, the answer), or with --raw the JSON lines."""
    path = f"/sessions/{quote(args.id, safe='')}/transcript"
    offset, data, harness = 0, b"", ""
    while True:
        response = server.request("GET", path, params={"offset": offset})
        if not response.is_success:
            raise CommandError(error_line(response))
        harness = response.headers.get("x-harness", harness)
        data += response.content
        offset = int(response.headers.get("x-transcript-offset", offset + len(response.content)))
        if not response.content:
            break
    out = sys.stdout.buffer
    if args.raw:
        out.write(data)
        out.flush()
        return 0
    stripper = ControlStripper()  # what the model and its tools wrote: shown, never obeyed
    for step in timeline(harness, data.splitlines()):
        line = f"{step.kind:<10} {step.title}"
        if step.detail:
            line += f"\n{'':<10} " + step.detail.replace("\n", f"\n{'':<10} ")
        out.write(stripper.feed((line + "\n").encode()).encode())
    out.write(stripper.end().encode())
    out.flush()
    return 0
