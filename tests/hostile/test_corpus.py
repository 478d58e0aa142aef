"""A named corpus of hostile deliveries through a whole running hookspawn.

Real Redis, a real Celery worker, real HTTP and the GitHub stand-in, with two agents:
`head-branch` checks out `refs/heads/{{payload.github.pullRequest.head.ref}}` and renders
the title and body into its texts; `titled` has a fixed ref and renders the same texts.
Each entry gets its documented answer: refused at intake with nothing recorded, queued or
spawned; or processed, with payload text rendered literally and unsafe refs refused
(`invalid_ref`) with no session for that agent.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
import redis

from hookspawn.serve.redis_server import RedisServer
from hookspawn.web.api import create_app
from tests.conftest import SECRET, make_settings, webhook_headers
from tests.github_standin import GitHubStandin
from tests.hostile.conftest import error_of, hookspawn_state
from tests.live_server import live_client
from tests.workers.delivery.pipeline.conftest import (
    ACCOUNT,
    INSTALLATION,
    OTHER_REPO,
    OTHER_REPO_ID,
    REPO,
    REPO_ID,
    Hookspawn,
    connect,
    example,
    start_hookspawn,
)
from triggers.errors import InvalidSignature
from triggers.intake import parse_delivery
from triggers.signature import sign
from workers.runtime import build_runtime

MOUNT = """\
harness: claude-code
environment:
  name: runtime
  image: {kind: preset, name: node24}
mounts:
  - kind: git
    repository: Codertocat/Hello-World
    mountPath: /workspace/hello
    ref: REF
    auth: {kind: githubApp, capabilities: {contents: read}}
"""
AGENTS = {
    "agents/head-branch.yaml": "name: head-branch\n"
    + MOUNT.replace("REF", "refs/heads/{{payload.github.pullRequest.head.ref}}")
    + """\
triggers:
  - event: pull_request
    actions: [opened]
    name: head
    displayTitle: "{{ github.pullRequest.title }}"
    initialPrompt: "Branch {{ github.pullRequest.head.ref }}"
""",
    "agents/titled.yaml": "name: titled\n"
    + MOUNT.replace("REF", "main")
    + """\
triggers:
  - event: pull_request
    actions: [opened]
    name: titled
    displayTitle: "PR {{ github.pullRequest.number }}: {{ github.pullRequest.title }}"
    message: "{{ github.pullRequest.body }}"
""",
}
MB25 = 25 * 1024 * 1024


@pytest.fixture(scope="module")
def hs(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory, webhooks_dir: Path
) -> Iterator[Hookspawn]:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    root = tmp_path_factory.mktemp("corpus")
    with GitHubStandin() as github:
        github.add_installation(
            INSTALLATION, ACCOUNT, repositories={REPO_ID: REPO, OTHER_REPO_ID: OTHER_REPO}
        )
        for running in start_hookspawn(root, redis_server.url, github, webhooks_dir, files=AGENTS):
            compiled = running.client.get("/agents").json()
            assert compiled["errors"] == []
            assert sorted(a["name"] for a in compiled["items"]) == ["head-branch", "titled"]
            connect(running)
            yield running


def pr_body(hs: Hookspawn, **changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(example(hs.webhooks, "pull_request/opened.payload.json"))
    head = changes.pop("head_ref", None)
    if head is not None:
        body["pull_request"]["head"]["ref"] = head
    body["pull_request"].update(changes)
    return body


def signed_headers(raw: bytes, delivery: str, **extra: str) -> dict[str, str]:
    return webhook_headers(raw, "pull_request", delivery, **extra)


def sessions_of(hs: Hookspawn, delivery: str) -> list[dict[str, Any]]:
    items = hs.client.get("/sessions", params={"limit": 1000}).json()["items"]
    assert len(items) < 1000
    return [s for s in items if s["origin"].get("deliveryId") == delivery]


# -- refused at intake: the documented status and code, nothing recorded or spawned --------


def _forged(raw: bytes) -> dict[str, str]:
    return {"X-Hub-Signature-256": sign(raw, "guessed secret")}


def _sha1_only(raw: bytes) -> dict[str, str]:
    # GitHub's legacy header, correctly computed with the real secret: still not accepted
    legacy = "sha1=" + hmac.new(SECRET.encode(), raw, hashlib.sha1).hexdigest()
    return {"X-Hub-Signature-256": "", "X-Hub-Signature": legacy}


def _sha1_in_256(raw: bytes) -> dict[str, str]:
    return {"X-Hub-Signature-256": "sha1=" + hmac.new(SECRET.encode(), raw, "sha1").hexdigest()}


INTAKE_REFUSALS: list[tuple[str, Any, int, str, str]] = [
    # (name, case builder, status, code, fragment of the message)
    ("forged signature", "forged", 401, "invalid_signature", "does not match"),
    ("sha1= only", "sha1-only", 401, "invalid_signature", "missing X-Hub-Signature-256"),
    ("sha1= in the sha256 header", "sha1-in-256", 401, "invalid_signature", "sha256="),
    ("truncated body", "truncated", 400, "invalid_body", "not JSON"),
    ("JSON nested 10,000 deep", "nested", 400, "invalid_body", "not JSON"),
    ("JSON nested 10,000 deep in a form", "nested-form", 400, "invalid_body", "not JSON"),
    ("non-UTF-8 body", "latin-1", 400, "invalid_body", "not UTF-8"),
    ("non-UTF-8 in a form payload", "latin-1-form", 400, "invalid_body", "form body"),
    ("UTF-8 byte order mark", "bom", 400, "invalid_body", "not JSON"),
    ("1e400", "1e400", 400, "invalid_body", "not JSON"),
    ("NaN literal", "nan", 400, "invalid_body", "not JSON"),
    ("raw NUL byte in a string", "raw-nul", 400, "invalid_body", "not JSON"),
    ("lone surrogate escape", "surrogate", 400, "invalid_body", "not JSON"),
]


def build(name: str, hs: Hookspawn, delivery: str) -> tuple[bytes, dict[str, str]]:
    good = json.dumps(pr_body(hs)).encode()
    form = "application/x-www-form-urlencoded"
    raw: bytes
    extra: dict[str, str] = {}
    if name in ("forged", "sha1-only", "sha1-in-256"):
        raw = good
        extra = {"forged": _forged, "sha1-only": _sha1_only, "sha1-in-256": _sha1_in_256}[name](raw)
    elif name == "truncated":
        raw = good[: len(good) // 2]
    elif name == "nested":
        raw = b'{"action": "opened", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    elif name == "nested-form":
        raw = urlencode({"payload": '{"x": ' + "[" * 10_000 + "]" * 10_000 + "}"}).encode()
        extra = {"Content-Type": form}
    elif name == "latin-1":
        raw = good.replace(b'"title": "', b'"title": "caf\xe9 ')
    elif name == "latin-1-form":
        raw = b"payload=" + good.replace(b'"title": "', b'"title": "caf\xe9 ')
        extra = {"Content-Type": form}
    elif name == "bom":
        raw = b"\xef\xbb\xbf" + good
    elif name == "1e400":
        raw = good.replace(b'"number": 2', b'"number": 1e400')
    elif name == "nan":
        raw = good.replace(b'"number": 2', b'"number": NaN')
    elif name == "raw-nul":
        raw = good.replace(b'"title": "', b'"title": "a\x00b')
    elif name == "surrogate":
        raw = good.replace(b'"title": "', b'"title": "\\ud800')
    else:
        raise AssertionError(name)
    assert raw != good or name in ("forged", "sha1-only", "sha1-in-256"), name
    headers = signed_headers(raw, delivery)
    headers.update(extra)
    return raw, {k: v for k, v in headers.items() if v}


@pytest.mark.parametrize(
    ("name", "case", "status", "code", "fragment"),
    INTAKE_REFUSALS,
    ids=[c[0] for c in INTAKE_REFUSALS],
)
def test_refused_at_intake_and_nothing_changes(
    hs: Hookspawn, name: str, case: str, status: int, code: str, fragment: str
) -> None:
    delivery = f"bad-{case}"
    raw, headers = build(case, hs, delivery)
    before = hookspawn_state(hs.rt.client)
    response = hs.client.post("/webhooks/github", content=raw, headers=headers)
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code
    assert fragment in error["message"], error
    assert hookspawn_state(hs.rt.client) == before
    assert hs.client.get(f"/deliveries/{delivery}").status_code == 404
    assert sessions_of(hs, delivery) == []


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_25_mb_plus_one_byte_is_413_even_when_signed(hs: Hookspawn, chunked: bool) -> None:
    raw = b'{"action": "opened", "pad": "' + b"x" * MB25 + b'"}'
    raw = raw[: MB25 + 1]
    assert len(raw) == MB25 + 1
    headers = signed_headers(raw, "too-big")
    before = hookspawn_state(hs.rt.client)
    content: bytes | Iterator[bytes] = raw
    if chunked:
        content = iter([raw[i : i + (1 << 20)] for i in range(0, len(raw), 1 << 20)])
    response = hs.client.post("/webhooks/github", content=content, headers=headers)
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"
    assert hookspawn_state(hs.rt.client) == before


def test_garbage_content_length_is_refused_by_the_http_server(hs: Hookspawn) -> None:
    """h11 (uvicorn) refuses the framing before the app runs: a 400 in plain text.

    The only refusal without the shared error body, since the app never sees the request.
    """
    raw = b'{"action": "opened"}'
    url = urlsplit(str(hs.client.base_url))
    before = hookspawn_state(hs.rt.client)
    for length in (b"abc", b"-1", b"1, 2"):
        request = (
            b"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            b"X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: cl-1\r\n"
            b"X-Hub-Signature-256: " + sign(raw, SECRET).encode() + b"\r\n"
            b"Content-Length: " + length + b"\r\nConnection: close\r\n\r\n" + raw
        )
        assert url.hostname is not None and url.port is not None
        with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 400 "), (length, answer[:200])
    assert hookspawn_state(hs.rt.client) == before


@pytest.mark.parametrize("configured", ["", " , ", [""], ["", " "]])
def test_empty_secret_configured_refuses_every_delivery(
    hs: Hookspawn, tmp_path: Path, configured: str | list[str]
) -> None:
    # a second web process on the same store, configured with only empty secrets
    rt = build_runtime(
        make_settings(
            redis_url=hs.rt.settings.redis_url, data_dir=tmp_path, webhook_secret=configured
        )
    )
    before = hookspawn_state(rt.client)
    raw = b'{"action": "opened"}'
    with live_client(create_app(rt)) as client:
        for signature in (sign(raw, ""), sign(raw, " "), sign(raw, SECRET)):
            response = client.post(
                "/webhooks/github",
                content=raw,
                headers={
                    "Content-Type": "application/json",
                    "X-GitHub-Event": "pull_request",
                    "X-GitHub-Delivery": "empty-secret",
                    "X-Hub-Signature-256": signature,
                },
            )
            assert response.status_code == 401
            error = error_of(response)
            assert error["code"] == "invalid_signature"
            assert "no webhook secret is configured" in error["message"]
    assert hookspawn_state(rt.client) == before
    rt.close()


# -- accepted and processed: literal text, unsafe refs refused, nothing else spawned ------

UNSAFE_BRANCHES = {
    "upload-pack": "--upload-pack=touch /tmp/pwned",
    "dash": "-x",
    "dot-dot": "a..b",
    "lock": "refs/heads/x.lock",
    "lock-component": "x.lock/y",
    "at-brace": "@{",
    "reflog": "main@{1}",
    "300-bytes": "a" * 300,
    "300-bytes-utf8": "é" * 150,
    "space": "a b",
    "newline": "a\nb",
    "tab": "a\tb",
    "nbsp": "a\u00a0b",
    "ideographic-space": "a\u3000b",
    "line-separator": "a\u2028b",
    "nul": "x\u0000y",
    "del": "a\x7fb",
    "tilde": "a~1",
    "caret": "a^",
    "colon": "a:b",
    "question": "a?b",
    "star": "a*b",
    "bracket": "a[b",
    "backslash": "a\\b",
    "leading-slash": "/a",
    "trailing-slash": "a/",
    "double-slash": "a//b",
    "leading-dot": ".a",
    "dot-component": "a/.b",
    "trailing-dot": "a.",
    "jinja": "{{ 7*7 }}",
}


@pytest.fixture(scope="module")
def unsafe_views(hs: Hookspawn) -> dict[str, dict[str, Any]]:
    """Every unsafe branch name (and a safe control) sent first, then waited for."""
    sent = {
        name: hs.send("pull_request", pr_body(hs, head_ref=branch), delivery=f"ref-{name}")
        for name, branch in {**UNSAFE_BRANCHES, "control": "feature/ok-1"}.items()
    }
    return {name: hs.processed(delivery) for name, delivery in sent.items()}


def test_a_safe_branch_spawns_so_the_refusals_mean_something(
    hs: Hookspawn, unsafe_views: dict[str, dict[str, Any]]
) -> None:
    view = unsafe_views["control"]
    outcome = hs.outcome(view, "head-branch")
    assert outcome["outcome"] == "dispatched", outcome
    session = hs.client.get(f"/sessions/{outcome['sessionId']}").json()
    assert session["mounts"][0]["ref"] == "refs/heads/feature/ok-1"


@pytest.mark.parametrize("name", sorted(UNSAFE_BRANCHES))
def test_unsafe_branch_name_is_invalid_ref_and_spawns_nothing(
    hs: Hookspawn, unsafe_views: dict[str, dict[str, Any]], name: str
) -> None:
    view = unsafe_views[name]
    assert view["status"] == "processed"
    refused = hs.outcome(view, "head-branch")
    assert (refused["outcome"], refused["code"]) == ("refused", "invalid_ref"), refused
    assert refused.get("sessionId") is None
    assert "/workspace/hello" in refused["message"]
    spawned = sessions_of(hs, view["deliveryId"])
    assert [s["agent"] for s in spawned] == ["titled"]
    # the payload text is rendered once, literally, into the agent that does spawn
    assert (
        spawned[0]["input"]["payload"]["github"]["pullRequest"]["head"]["ref"]
        == (UNSAFE_BRANCHES[name])
    )


JINJA = [
    "{{ 7*7 }}",
    "{% for x in range(10) %}{{ x }}{% endfor %}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{# comment #} {%- raw %}{{ x }}{% endraw %}",
    "\\{{ github.pullRequest.title }} {{ github.pullRequest.title }}",
    "${{ github.sha }} {{{{ }}}} {{",
]


@pytest.mark.parametrize("text", JINJA, ids=range(len(JINJA)))
def test_payload_jinja_is_rendered_literally(hs: Hookspawn, text: str) -> None:
    delivery = hs.send("pull_request", pr_body(hs, title=text, body=text, head_ref="feature/x"))
    view = hs.processed(delivery)
    by_agent = {s["agent"]: s for s in sessions_of(hs, delivery)}
    assert set(by_agent) == {"head-branch", "titled"}, view["outcomes"]
    assert by_agent["titled"]["displayTitle"] == f"PR 2: {text}"
    assert by_agent["titled"]["message"] == text
    assert by_agent["head-branch"]["displayTitle"] == text


def test_nul_in_a_title_is_kept_literally(hs: Hookspawn) -> None:
    title = "before\u0000after"
    delivery = hs.send("pull_request", pr_body(hs, title=title, head_ref="feature/nul"))
    hs.processed(delivery)
    by_agent = {s["agent"]: s for s in sessions_of(hs, delivery)}
    assert by_agent["titled"]["displayTitle"] == f"PR 2: {title}"
    assert by_agent["head-branch"]["displayTitle"] == title


def test_duplicate_keys_last_wins_and_the_signature_covers_the_raw_bytes(hs: Hookspawn) -> None:
    """The first `action` says closed (fires nothing), the last says opened: the last wins.

    Intake and worker read the same stored bytes with the same parser, so both see
    `opened`; the signature is over the raw bytes, duplicates and all, and those bytes are
    what is stored.
    """
    body = json.dumps(pr_body(hs, head_ref="first-branch")).encode()
    raw = body.replace(b'{"action": "opened"', b'{"action": "closed", "action": "opened"', 1)
    raw = raw.replace(
        b'"ref": "first-branch"', b'"ref": "first-branch", "ref": "refs/heads/x.lock"', 1
    )
    assert raw.count(b'"action"') == 2 and raw.count(b"x.lock") == 1
    delivery = "dup-keys"
    response = hs.client.post(
        "/webhooks/github", content=raw, headers=signed_headers(raw, delivery)
    )
    assert response.status_code == 202, response.text
    view = hs.processed(delivery)
    assert view["action"] == "opened"
    assert hs.rt.store.body(delivery) == raw
    assert hs.outcome(view, "titled")["outcome"] == "dispatched"
    refused = hs.outcome(view, "head-branch")
    assert (refused["outcome"], refused["code"]) == ("refused", "invalid_ref")
    # the same bytes signed, then one duplicate dropped: the signature no longer matches
    edited = raw.replace(b'"action": "closed", ', b"", 1)
    forged = signed_headers(raw, "dup-keys-2")
    assert hs.client.post("/webhooks/github", content=edited, headers=forged).status_code == 401


def test_minus_zero_is_the_integer_zero(hs: Hookspawn) -> None:
    body = json.dumps(pr_body(hs, number=777_777, head_ref="feature/z")).encode()
    raw = body.replace(b'"number": 777777', b'"number": -0')
    assert raw.count(b'"number": -0') == 1
    delivery = "minus-zero"
    response = hs.client.post(
        "/webhooks/github", content=raw, headers=signed_headers(raw, delivery)
    )
    assert response.status_code == 202
    hs.processed(delivery)
    by_agent = {s["agent"]: s for s in sessions_of(hs, delivery)}
    assert by_agent["titled"]["displayTitle"].startswith("PR 0: ")


def test_an_integer_past_64_bits_renders_as_digits(hs: Hookspawn) -> None:
    raw = json.dumps(pr_body(hs, number=2**70, head_ref="feature/big")).encode()
    assert str(2**70).encode() in raw
    delivery = "huge-int"
    response = hs.client.post(
        "/webhooks/github", content=raw, headers=signed_headers(raw, delivery)
    )
    assert response.status_code == 202
    hs.processed(delivery)
    by_agent = {s["agent"]: s for s in sessions_of(hs, delivery)}
    assert by_agent["titled"]["displayTitle"].startswith(f"PR {2**70}: ")


@pytest.mark.parametrize("secrets", [[""], [" "], ["", "\t"]], ids=["empty", "space", "both"])
def test_intake_itself_treats_empty_secrets_as_none(secrets: list[str]) -> None:
    """Settings drop empty secrets; the intake check fails closed on its own as well."""
    raw = b'{"action": "opened"}'
    headers = {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": "d-1",
        "x-hub-signature-256": sign(raw, secrets[0]),
    }
    with pytest.raises(InvalidSignature, match="no webhook secret is configured"):
        parse_delivery(headers, raw, secrets)


def test_an_unparseable_admin_body_is_an_invalid_request(hs: Hookspawn) -> None:
    before = hookspawn_state(hs.rt.client)
    response = hs.client.post(
        "/agents/titled/sessions",
        content=b'{"displayTitle": "caf\xe9"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert error_of(response)["code"] == "invalid_request"
    assert hookspawn_state(hs.rt.client) == before
