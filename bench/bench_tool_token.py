"""What minting a token for each GitHub tool call costs, against the GitHub stand-in.

One tool call (`get_file_contents` through githubkit, as the MCP endpoint makes it) two ways,
interleaved: with a token the session already holds (SessionTokens.get, reused: how tool calls
were made before), and with a token minted for that call and revoked once it is made
(SessionTokens.for_call + release: how they are made now). The difference of the medians is what
the per-call token costs a call: one `POST /app/installations/{id}/access_tokens` before it,
and its `DELETE /installation/token` after it, on the revoking thread (the answer does not wait
for it; its CPU is counted, as it competes with the calls that follow). Target: under 20 ms.

    .venv/bin/python bench/bench_tool_token.py [calls per pass] [passes]
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from concurrent.futures import Future
from pathlib import Path

# Run as a script (`python bench/bench_tool_token.py`): import the tree this file is in.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.github_standin import GitHubStandin
from workers.github.client import GitHubApp
from workers.github.tools import run_tool, token_client
from workers.session.tokens import SessionTokens

APP_ID = "4242"
INSTALLATION = 7
REPOSITORY = (101, "acme/widgets")
PERMISSIONS = {"contents": "read", "metadata": "read"}
ARGS = {"owner": "acme", "repo": "widgets", "path": "README.md"}
TARGET_MS = 20.0


def _call(api_url: str, token: str) -> None:
    with token_client(token, api_url) as github:
        answer = run_tool(github, "get_file_contents", "acme/widgets", ARGS)
    assert answer == "widgets\n", answer


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with GitHubStandin(app_id=APP_ID) as gh:
        gh.add_installation(INSTALLATION, "acme", repositories=[REPOSITORY])
        gh.repos.add("acme/widgets", {"README.md": "widgets\n"})
        app = GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url)
        tokens = SessionTokens(app.mint_token, app.revoke_token)

        def reused() -> float:
            start = time.perf_counter()
            token = tokens.get("s1", INSTALLATION, [REPOSITORY[0]], PERMISSIONS)
            _call(gh.url, token.token)
            return time.perf_counter() - start

        pending: list[Future[None]] = []

        def per_call() -> float:
            start = time.perf_counter()
            token = tokens.for_call("s2", INSTALLATION, [REPOSITORY[0]], PERMISSIONS)
            try:
                _call(gh.url, token.token)
            finally:
                revoking = tokens.release("s2", token)
                if revoking is not None:
                    pending.append(revoking)
            return time.perf_counter() - start

        reused(), per_call()  # warm: the App's JWT, the first connection
        print(
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"load {os.getloadavg()[0]:.1f}; {calls} calls a pass, each way, interleaved"
        )
        costs = []
        for n in range(passes):
            a, b = [], []
            for _ in range(calls):
                a.append(reused())
                b.append(per_call())
            ma, mb = statistics.median(a) * 1000, statistics.median(b) * 1000
            p99a = sorted(a)[int(len(a) * 0.99) - 1] * 1000
            p99b = sorted(b)[int(len(b) * 0.99) - 1] * 1000
            costs.append(mb - ma)
            print(
                f"pass {n + 1}: reused token median {ma:.2f} ms (p99 {p99a:.2f}); "
                f"token per call median {mb:.2f} ms (p99 {p99b:.2f}); cost {mb - ma:.2f} ms"
            )
        for revoking in pending:
            revoking.result()
        revoked = len(gh.revoked)
        assert revoked == len(pending), (revoked, len(pending))
        best, worst = min(costs), max(costs)
        verdict = "ok" if worst < TARGET_MS else "MISSED"
        print(
            f"per-call token cost {best:.2f} to {worst:.2f} ms a call over {passes} passes "
            f"({revoked} tokens revoked; target < {TARGET_MS:.0f} ms: {verdict})"
        )


if __name__ == "__main__":
    main()
