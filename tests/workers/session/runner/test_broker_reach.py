"""What a real session reaches from inside srt: its harness, with the runner's own
HOOKSPAWN_BROKER_URL, gets its broker routes on the broker listener and no admin route, and
the admin API's port is refused by srt's proxy even with loopback listed as allowed."""

from __future__ import annotations

import base64
import dataclasses
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from tests.workers.session.broker.test_broker_listener import ADMIN_PROBES, PROBE, REFUSED
from tests.workers.session.runner.conftest import Origin
from tests.workers.session.runner.test_github_app import github_app_stack


def _harness(requests: list[tuple[str, str]]) -> str:
    """The harness: PROBE (base64, so no quoting reaches the shell) over `requests`."""
    code = base64.b64encode(PROBE.encode()).decode()
    args = " ".join(shlex.quote(part) for request in requests for part in request)
    return f'python3 -c \'exec(__import__("base64").b64decode("{code}"))\' {args}'


def test_a_harness_reaches_its_broker_routes_and_no_admin_route(
    redis_url: str, shared_dir: Path, origin: Origin, webhooks_dir: Path
) -> None:
    # the broadest an operator could list for loopback: the admin port stays closed all the same
    with github_app_stack(
        redis_url, shared_dir, origin, sandbox_allowed_domains=["127.0.0.1", "localhost"]
    ) as stack:
        admin = str(urlsplit(stack.settings.public_url).port)
        requests = [
            ("GET", "http://$BROKER/sessions/SESSION/github-tools"),
            *(
                (method, f"http://$BROKER{path.partition('?')[0]}")
                for method, path, _ in ADMIN_PROBES
            ),
            ("GET", f"http://127.0.0.1:{admin}/sessions"),
            ("POST", f"http://127.0.0.1:{admin}/agents/pr-review/sessions"),
            ("GET", f"http://localhost:{admin}/deliveries"),
            ("GET", f"http://[::1]:{admin}/deliveries"),
        ]
        session_id = stack.deliver("app-pr-reach", webhooks_dir)
        requests[0] = ("GET", f"http://$BROKER/sessions/{session_id}/github-tools")
        probing = dataclasses.replace(
            stack,
            settings=stack.settings.model_copy(update={"harness_command": _harness(requests)}),
        )
        with probing.runner():
            session = stack.ended(session_id)
        listed = stack.http.get("/sessions").json()["items"]
    assert session["status"] == "succeeded", (session["failure"], session["logTail"])
    log = (stack.settings.data_dir / "sessions" / session_id / "log").read_text()
    lines = [line.removeprefix("  | ") for line in log.splitlines() if line.startswith("  | GET ")]
    lines += [
        line.removeprefix("  | ") for line in log.splitlines() if line.startswith("  | POST ")
    ]
    assert len(lines) == len(requests), log
    answers = {line.split(" ")[1]: line.split(" ", 2)[2] for line in lines}
    broker = urlsplit(stack.settings.broker_base_url).netloc
    assert answers[f"http://{broker}/sessions/{session_id}/github-tools"] == "200", answers
    for method, path, _ in ADMIN_PROBES:
        status = answers[f"http://{broker}{path.partition('?')[0]}"].split(" ")[0]
        assert int(status) in REFUSED, (method, path, status)
    for host in ("127.0.0.1", "localhost", "[::1]"):
        refused = [v for k, v in answers.items() if k.startswith(f"http://{host}:{admin}/")]
        assert refused, (host, answers)
        assert all(v.startswith("403 ") and "blocked" in v.lower() for v in refused), refused
    assert [s["id"] for s in listed] == [session_id], "the harness started a session"
