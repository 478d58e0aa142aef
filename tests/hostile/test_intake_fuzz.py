"""Hypothesis-driven requests to POST /webhooks/github over real HTTP with a real Redis.

Every request gets a documented status, every refusal the shared error body with the code
that belongs to its status, the checks run in the intake's order, and a refused request
leaves the store exactly as it was; an accepted one is recorded byte for byte.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hookspawn.web.api import create_app
from tests.conftest import SECRET, make_settings
from tests.hostile.conftest import INTAKE_CODES, error_of, store_state
from tests.live_server import live_client
from triggers.intake import DELIVERY_ID, EVENT_NAME
from triggers.signature import sign
from workers.runtime import build_runtime

pytestmark = pytest.mark.slow

EXAMPLES = 600
QUEUE = "hookspawn"

# -- bodies ------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(
    st.sampled_from(["action", "repository", "installation", "sender", "zen"])
    | st.text(max_size=8),
    json_values,
    max_size=5,
)


@st.composite
def json_documents(draw: st.DrawFn) -> bytes:
    """Valid JSON objects, real payloads, other JSON values, or JSON broken in one place."""
    kind = draw(
        st.sampled_from(["object"] * 3 + ["real"] * 3 + ["value", "broken", "binary", "text"])
    )
    if kind == "object":
        return orjson.dumps(draw(json_objects))
    if kind == "real":
        return draw(st.sampled_from(REAL_PAYLOADS))
    if kind == "value":
        return orjson.dumps(draw(json_values))
    if kind == "broken":
        doc = orjson.dumps(draw(json_objects))
        cut = draw(st.integers(min_value=0, max_value=max(0, len(doc) - 1)))
        junk = draw(
            st.sampled_from([b"", b"\xff", b"\x00", b",", b"}", b'"', b"NaN", b"\xef\xbb\xbf"])
        )
        return doc[:cut] + junk + doc[cut + 1 :]
    if kind == "binary":
        return draw(st.binary(max_size=200))
    return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, str]:
    """(raw body, the content type it was written for)."""
    document = draw(json_documents())
    if draw(st.booleans()):
        return document, "application/json"
    shape = draw(st.sampled_from(["payload", "payload", "two-payloads", "no-payload", "raw"]))
    text = document.decode("utf-8", "replace")
    if shape == "payload":
        return urlencode({"payload": text}).encode(), "application/x-www-form-urlencoded"
    if shape == "two-payloads":
        return urlencode(
            [("payload", text), ("payload", "{}")]
        ).encode(), "application/x-www-form-urlencoded"
    if shape == "no-payload":
        return urlencode({"other": text}).encode(), "application/x-www-form-urlencoded"
    return document, "application/x-www-form-urlencoded"


# -- headers -----------------------------------------------------------------------------

# header values HTTP can carry (no CR, LF, NUL, no space at either end); read as latin-1
header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=80
).map(lambda value: value.strip(" \t"))
content_types = (
    st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/x-www-form-urlencoded",
            "application/x-www-form-urlencoded; charset=utf-8",
            "text/plain",
            "application/vnd.github+json",
            "multipart/form-data; boundary=x",
            "",
        ]
    )
    | header_text
)
EVENTS = ["pull_request", "issues", "push", "ping", "installation"]
DELIVERY_POOL = ["d-1", "d-2", "72d3162e-cc78-11e3-81ab-4c9367dc0958"]


def mostly(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    """Mostly a valid value (to reach the later checks), sometimes absent or garbage."""
    choices: dict[str, st.SearchStrategy[str | None]] = {
        "valid": valid,
        "absent": st.none(),
        "garbage": header_text,
    }
    return st.sampled_from(["valid"] * 8 + ["absent", "garbage"]).flatmap(choices.__getitem__)


events = mostly(st.sampled_from(EVENTS))
deliveries = mostly(
    st.sampled_from(DELIVERY_POOL) | st.uuids().map(str) | st.from_regex(r"\A[A-Za-z0-9-]{1,64}\Z")
)


@dataclass(frozen=True)
class Attempt:
    body: bytes
    content_type: str | None
    event: str | None
    delivery: str | None
    signature: str | None
    signature_kind: str
    chunked: bool

    def headers(self) -> list[tuple[bytes, bytes]]:
        out = []
        for name, value in (
            ("Content-Type", self.content_type),
            ("X-GitHub-Event", self.event),
            ("X-GitHub-Delivery", self.delivery),
            ("X-Hub-Signature-256", self.signature),
        ):
            if value is not None:
                out.append((name.encode(), value.encode("latin-1")))
        return out


@st.composite
def attempts(draw: st.DrawFn) -> Attempt:
    body, written_for = draw(bodies())
    content_type = draw(
        st.sampled_from(["as written"] * 3 + ["other"]).flatmap(
            lambda k: mostly(st.just(written_for)) if k == "as written" else content_types
        )
    )
    kind = draw(
        st.sampled_from(
            ["valid"] * 6 + ["missing", "sha1", "forged", "other-body", "garbage", "short", "upper"]
        )
    )
    signature = {
        "valid": sign(body, SECRET),
        "missing": None,
        "sha1": "sha1=" + "0" * 40,
        "forged": sign(body, "not the secret"),
        "other-body": sign(body + b" ", SECRET),
        "garbage": draw(header_text),
        "short": sign(body, SECRET)[:-2],
        # hex digits are case-insensitive: the same digest in capitals still verifies
        "upper": "sha256=" + sign(body, SECRET).removeprefix("sha256=").upper(),
    }[kind]
    return Attempt(
        body=body,
        content_type=content_type,
        event=draw(events),
        delivery=draw(deliveries),
        signature=signature,
        signature_kind=kind,
        chunked=draw(st.integers(0, 4)) == 0,
    )


# -- the reference: the intake's order, written independently of triggers/intake ------------


def expected_refusal(a: Attempt) -> tuple[int, str] | None:
    """(status, code) for a refusal decided before the body, or None to go on to the body."""
    if a.signature_kind not in ("valid", "upper"):
        return 401, "invalid_signature"
    event = (a.event or "").strip()
    if not event or not EVENT_NAME.fullmatch(event):
        return 400, "invalid_header"
    delivery = (a.delivery or "").strip()
    if not delivery or not DELIVERY_ID.fullmatch(delivery):
        return 400, "invalid_header"
    media = (a.content_type or "").split(";", 1)[0].strip().lower()
    if media not in ("application/json", "application/x-www-form-urlencoded"):
        return 415, "unsupported_content_type"
    return None


def document_of(a: Attempt) -> bytes | None:
    """The JSON document the body carries, or None when the body is refused (400)."""
    media = (a.content_type or "").split(";", 1)[0].strip().lower()
    raw = a.body
    if media == "application/x-www-form-urlencoded":
        try:
            form = parse_qs(raw.decode("ascii"), keep_blank_values=True, strict_parsing=True)
        except (UnicodeDecodeError, ValueError):
            return None
        if len(form.get("payload", [])) != 1:
            return None
        raw = form["payload"][0].encode()
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse, parse_float=_finite)
    except (UnicodeDecodeError, ValueError):
        return None
    return raw if isinstance(value, dict) else None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} overflows a double")  # orjson refuses these
    return value


REAL_PAYLOADS: list[bytes] = []


def _load_real(webhooks: Path) -> None:
    if not REAL_PAYLOADS:
        for name in ("pull_request/opened", "issues/opened", "push/", "ping/"):
            REAL_PAYLOADS.append(
                (webhooks / f"{name}.payload.json".replace("/.", "/")).read_bytes()
            )


def send(client: httpx.Client, a: Attempt) -> httpx.Response:
    content: bytes | Iterator[bytes] = a.body
    if a.chunked:
        # no Content-Length: the body arrives chunked and is capped while it streams
        content = iter([a.body[:7], a.body[7:]])
    return client.post("/webhooks/github", content=content, headers=a.headers())


def test_random_requests_get_documented_answers_and_refusals_change_nothing(
    redis_url: str, tmp_path: Path, webhooks_dir: Path
) -> None:
    _load_real(webhooks_dir)
    rt = build_runtime(make_settings(redis_url=redis_url, data_dir=tmp_path / "data"))
    seen: dict[str, int] = {}
    accepted: set[str] = set()
    with live_client(create_app(rt)) as client:

        @given(attempt=attempts())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        def check(attempt: Attempt) -> None:
            before = store_state(rt.client)
            response = send(client, attempt)
            status = response.status_code
            label = str(status)
            if status >= 400:
                label += " " + str(response.json()["error"]["code"])
            seen[label] = seen.get(label, 0) + 1
            assert status in (200, 202, 400, 401, 415), (status, response.text)
            refusal = expected_refusal(attempt)
            document = document_of(attempt) if refusal is None else None
            if refusal is None and document is None:
                refusal = (400, "invalid_body")
            if refusal is not None:
                error = error_of(response)
                assert (status, error["code"]) == refusal, error
                assert error["code"] in INTAKE_CODES[status]
                assert store_state(rt.client) == before
                return
            assert document is not None and attempt.delivery is not None
            delivery = attempt.delivery.strip()
            assert response.json()["deliveryId"] == delivery
            if delivery in accepted:
                assert (status, response.json()["status"]) == (200, "duplicate")
                assert store_state(rt.client) == before
                return
            accepted.add(delivery)
            event = (attempt.event or "").strip()
            assert status == (200 if event == "ping" else 202)
            assert response.json()["status"] == "queued"
            record = rt.store.get(delivery)
            assert record is not None and record.event == event
            # the signature covers the raw bytes, and the raw JSON document is what is kept
            assert rt.store.body(delivery) == document

        check()
    rt.close()
    # the generator really reached every stage: refusals of each kind and acceptances
    print(f"intake fuzz: {EXAMPLES} examples, statuses {sorted(seen.items())}")
    assert {
        "200",
        "202",
        "400 invalid_header",
        "400 invalid_body",
        "401 invalid_signature",
        "415 unsupported_content_type",
    } <= set(seen), seen
