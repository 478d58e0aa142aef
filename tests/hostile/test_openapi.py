"""schemathesis against /openapi.json over real HTTP: no 5xx, shared error bodies, conformance.

Every operation of the published document gets schema-valid (positive) and schema-invalid
(negative) requests with the admin token, generated deterministically so the findings are
the same on every run. What each test asserts:

- `test_no_server_errors`: no answer is a 5xx (schemathesis' `not_a_server_error`).
- `test_every_refusal_has_the_shared_error_body`: every 4xx is `{"error": {code, message,
  details}}`, the generated 422s included.
- `test_responses_conform_to_the_schema`: all of schemathesis' default checks (status code,
  content type, headers and body schema conformance, negative data rejected, positive data
  accepted). Routes declare their response models (hookspawn/web/routes/models.py), so bodies are
  checked against them; what is left is listed in KNOWN_GAPS, and the test fails both on a
  new gap and on a listed status code the document declares now (shrink the list then).
- `test_untyped_response_bodies`: which documented answers have no real body schema
  (routes that need a response model), as a list that must match what is served; and every
  documented failure (422 included) is the shared error body.
- `test_admin_routes_need_the_token`: without the token every admin operation is a 401;
  `test_the_document_and_its_pages_need_the_token`: so are /openapi.json, /docs and /redoc.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.result import Ok

from hookspawn.serve.redis_server import RedisServer
from hookspawn.web.api import create_app
from tests import loopback
from tests.conftest import make_settings
from tests.live_server import live_server
from tests.suite_marks import marks_tests
from tests.workers.delivery.pipeline.conftest import write_agents
from workers.runtime import build_runtime

TOKEN = "hostile-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 25
PUBLIC = {"POST /webhooks/github", "GET /healthz", "GET /readyz"}
#: the document itself and the pages that show it: admin routes like the rest
DOCUMENT_PAGES = ("/openapi.json", "/docs", "/redoc")

AGENT = """
name: tidy
harness: claude-code
environment:
  name: runtime
  image: {kind: preset, name: node24}
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/w
    ref: refs/heads/{{payload.github.pullRequest.head.ref}}
triggers:
  - event: pull_request
    displayTitle: "{{ github.pullRequest.title }}"
"""

#: status codes answered but not declared in the document, and other conformance failures,
#: per operation; the test fails on a gap not listed here, and on a listed UndefinedStatusCode
#: the document declares now (shrink the list then)
KNOWN_GAPS = {
    # 400 github_not_configured for a schema-valid request: the test server has no GitHub App
    # credentials (nothing leaves 127.0.0.1), so every sync is refused; declared, not a doc gap
    "POST /connections/sync: RejectedPositiveData 400",
}

#: documented JSON answers whose body schema says nothing more than "a JSON object" (or
#: nothing): routes that still need a response model. Empty: every JSON answer is typed.
#: /ui (HTML) is left out of the document by ui.py; /metrics documents Prometheus text only.
KNOWN_UNTYPED: set[str] = set()

#: documented failures whose body is not the shared error body
NOT_ERROR_BODIES = {"GET /readyz 503"}  # the readiness report, saying what is unreachable

ERROR_BODY = {"$ref": "#/components/schemas/ErrorBody"}


@dataclass
class Findings:
    operations: list[str] = field(default_factory=list)
    calls: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    bad_error_bodies: list[str] = field(default_factory=list)
    conformance: dict[str, str] = field(default_factory=dict)  # gap → one example
    document: dict[str, Any] = field(default_factory=dict)
    unauthenticated: dict[str, int] = field(default_factory=dict)
    pages: dict[str, tuple[int, int]] = field(default_factory=dict)  # without, with the token


def shape_problem(response: schemathesis.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return "not JSON"
    if not isinstance(body, dict) or set(body) != {"error"}:
        return "not {'error': …}"
    error = body["error"]
    if not isinstance(error, dict) or set(error) != {"code", "message", "details"}:
        return "error is not {code, message, details}"
    if not (isinstance(error["code"], str) and error["code"]):
        return "code is not a non-empty string"
    if not (isinstance(error["message"], str) and error["message"].strip()):
        return "message is empty"
    if not isinstance(error["details"], dict):
        return "details is not an object"
    return None


def record(findings: Findings, label: str, case: schemathesis.Case[Any]) -> None:
    response = case.call(headers=AUTH)
    status = response.status_code
    findings.calls += 1
    findings.statuses[status] = findings.statuses.get(status, 0) + 1
    where = f"{label} {status}: {case.as_curl_command(headers=AUTH)}"
    if status >= 500:
        findings.server_errors.append(f"{where} → {response.text[:300]}")
    if status >= 400 and (problem := shape_problem(response)):
        findings.bad_error_bodies.append(f"{where} → {problem}: {response.text[:300]}")
    try:
        case.validate_response(response, headers=AUTH)
    except FailureGroup as group:
        for failure in group.exceptions:
            findings.conformance.setdefault(f"{label}: {type(failure).__name__} {status}", where)
    except Failure as failure:
        findings.conformance.setdefault(f"{label}: {type(failure).__name__} {status}", where)


def _bound(findings: Findings, label: str) -> Callable[[schemathesis.Case[Any]], None]:
    def probe(case: schemathesis.Case[Any]) -> None:
        record(findings, label, case)

    return probe


def exercise(url: str, findings: Findings) -> None:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", headers=AUTH)
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), (
            f"the document has an operation schemathesis cannot use: {result}"
        )
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        findings.operations.append(label)
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            run = given(case=operation.as_strategy(generation_mode=mode))(
                settings(
                    max_examples=EXAMPLES,
                    deadline=None,
                    derandomize=True,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                )(_bound(findings, label))
            )
            try:
                run()
            except Unsatisfiable:
                # nothing in this operation can be made schema-invalid (no parameters, no body)
                assert mode is schemathesis.GenerationMode.NEGATIVE, label


@pytest.fixture(scope="module")
@marks_tests("slow", timeout=360)
def findings(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Findings:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    root = tmp_path_factory.mktemp("openapi")
    auto = write_agents(root, {"agents/tidy.yaml": AGENT})
    rt = build_runtime(
        make_settings(
            redis_url=redis_server.url, data_dir=root / "data", agents_dir=auto, admin_token=TOKEN
        )
    )
    found = Findings()
    app = create_app(rt)
    with live_server(app) as url, loopback.Client(base_url=url, timeout=30) as http:
        found.document = http.get("/openapi.json", headers=AUTH).json()
        exercise(url, found)
        for path in DOCUMENT_PAGES:
            found.pages[path] = (
                http.get(path).status_code,
                http.get(path, headers=AUTH).status_code,
            )
        for label in found.operations:
            method, path = label.split(" ", 1)
            concrete = path.replace("{", "").replace("}", "")
            found.unauthenticated[label] = http.request(method, concrete).status_code
    rt.close()
    print(
        f"schemathesis: {len(found.operations)} operations, {found.calls} calls, "
        f"statuses {sorted(found.statuses.items())}"
    )
    return found


def test_no_server_errors(findings: Findings) -> None:
    assert findings.calls >= 10 * len(findings.operations)
    assert findings.server_errors == []


def test_every_refusal_has_the_shared_error_body(findings: Findings) -> None:
    assert any(status >= 400 for status in findings.statuses)
    assert findings.bad_error_bodies == []


def test_responses_conform_to_the_schema(findings: Findings) -> None:
    found = set(findings.conformance)
    new = {gap: findings.conformance[gap] for gap in found - KNOWN_GAPS}
    shown = "\n".join(f"{gap}\n    e.g. {example}" for gap, example in sorted(new.items()))
    assert not new, f"new conformance failures:\n{shown}"
    # whether generation hits a listed gap depends on the document, so a gap is "closed"
    # when the document declares the status now, not when this run happened to miss it
    closed = set()
    for gap in KNOWN_GAPS:
        label, _, failure = gap.partition(": ")
        method, path = label.split(" ", 1)
        kind, status = failure.split()
        declared = findings.document["paths"].get(path, {}).get(method.lower(), {})
        if kind == "UndefinedStatusCode" and status in declared.get("responses", {}):
            closed.add(gap)
    assert closed == set(), "documented now: remove these from KNOWN_GAPS"


def _untyped(schema: dict[str, Any] | None) -> bool:
    """True for no schema, `{}`, or an object with no declared properties."""
    if not schema:
        return True
    if "$ref" in schema:
        return False
    return schema.get("type") == "object" and not schema.get("properties")


def test_untyped_response_bodies(findings: Findings) -> None:
    untyped = set()
    failures = {}
    for path, methods in findings.document["paths"].items():
        for method, spec in methods.items():
            for status, answer in spec.get("responses", {}).items():
                label = f"{method.upper()} {path} {status}"
                content = answer.get("content", {})
                if content and "application/json" not in content:
                    continue  # not a JSON answer (GET /metrics is Prometheus text)
                schema = content.get("application/json", {}).get("schema")
                if int(status) >= 400 and label not in NOT_ERROR_BODIES:
                    failures[label] = schema
                elif _untyped(schema):
                    untyped.add(label)
    assert untyped - KNOWN_UNTYPED == set(), "new untyped answers: give the route a response model"
    assert KNOWN_UNTYPED - untyped == set(), "typed now: remove these from KNOWN_UNTYPED"
    # every documented failure is the shared error body, the 422s included: the
    # app's handler answers {"error": {...}}, not FastAPI's default {"detail": [...]}
    assert failures, "no failure is documented"
    assert {label: s for label, s in failures.items() if s != ERROR_BODY} == {}
    # the Host check answers before any route: every operation documents its 421
    operations = {label.rsplit(" ", 1)[0] for label in failures} | {
        f"{method.upper()} {path}"
        for path, methods in findings.document["paths"].items()
        for method in methods
    }
    assert {op for op in operations if f"{op} 421" not in failures} == set()
    assert any(label.endswith(" 422") for label in failures)
    components = findings.document["components"]["schemas"]
    assert "HTTPValidationError" not in components
    assert "ValidationError" not in components
    error = components["ErrorBody"]
    assert error["required"] == ["error"] and error["additionalProperties"] is False
    detail = components[error["properties"]["error"]["$ref"].rsplit("/", 1)[1]]
    assert sorted(detail["required"]) == ["code", "details", "message"]


def test_admin_routes_need_the_token(findings: Findings) -> None:
    admin = {label: s for label, s in findings.unauthenticated.items() if label not in PUBLIC}
    assert admin
    assert {label: s for label, s in admin.items() if s != 401} == {}
    public = {label: s for label, s in findings.unauthenticated.items() if label in PUBLIC}
    assert all(s != 401 or label == "POST /webhooks/github" for label, s in public.items())


def test_the_document_and_its_pages_need_the_token(findings: Findings) -> None:
    assert findings.pages == {path: (401, 200) for path in DOCUMENT_PAGES}
