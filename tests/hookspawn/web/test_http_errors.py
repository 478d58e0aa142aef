"""The error families share one root, and the HTTP edge answers them from one table by MRO."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import redis

from agents.errors import AgentsError
from hookspawn.web.http_errors import (
    API_CODES,
    START_REFUSALS,
    STATUS,
    ApiError,
    MisdirectedRequest,
    StartFailed,
    StartRefused,
    UnauthorizedRepository,
    status_of,
    to_response,
)
from templating.errors import Error, TemplateError
from triggers.errors import IntakeError, InvalidSignature, PayloadTooLarge, TriggersError
from triggers.session.access import AccessDenied
from workers.errors import (
    AccessRevoked,
    BrokerDenied,
    BrokerNotFound,
    ConfigurationError,
    DispatchUnavailable,
    StoreUnavailable,
    Transient,
    WorkerError,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("base", [TemplateError, AgentsError, TriggersError, WorkerError, ApiError])
def test_each_package_base_derives_from_the_one_root(base: type[Exception]) -> None:
    assert issubclass(base, Error)
    assert "__init__" not in vars(base) or base is ApiError


def test_the_root_carries_code_message_and_details() -> None:
    error = WorkerError("the thing at x is wrong", code="bad_thing", where="x")
    assert (error.code, error.message, error.details) == (
        "bad_thing",
        "the thing at x is wrong",
        {"where": "x"},
    )
    assert str(error) == "the thing at x is wrong"
    assert PayloadTooLarge("too big").code == "payload_too_large"
    assert PayloadTooLarge("too big", limit=5).details == {"limit": 5}


def test_a_subclass_not_in_the_table_gets_its_parents_status() -> None:
    class NewIntakeProblem(InvalidSignature):
        pass

    class NewOutage(DispatchUnavailable):
        pass

    assert NewIntakeProblem not in STATUS and NewOutage not in STATUS
    assert status_of(NewIntakeProblem("x")) == 401
    assert status_of(NewOutage("x")) == 503
    assert status_of(StoreUnavailable("x")) == 503
    assert status_of(Transient("x")) == 503


def test_the_nearest_class_wins_whatever_the_table_order() -> None:
    assert status_of(IntakeError("x")) == 400
    assert status_of(PayloadTooLarge("x")) == 413
    assert status_of(ConfigurationError("x")) == 500
    assert status_of(WorkerError("x")) == 400
    # a refusal outside a start (POST /connections/sync) is a worker error like any other
    revoked = AccessRevoked("gone", kind="repository_inaccessible", installation_id=1)
    assert status_of(revoked) == 400
    assert status_of(redis.ConnectionError("down")) == 503
    assert status_of(ValueError("unexpected")) == 500


def test_a_routes_own_refusal_is_answered_with_its_codes_status() -> None:
    assert status_of(ApiError("session_not_found", "no session 'x'")) == 404
    assert status_of(ApiError("not_cancellable", "session 'x' has ended")) == 409
    # a code the table lacks is a bug, answered as one
    assert status_of(ApiError("no_such_code", "?")) == 500


def test_every_code_a_route_raises_has_its_status() -> None:
    raised = set()
    for path in (ROOT / "hookspawn").rglob("*.py"):
        raised |= set(re.findall(r'(?:ApiError|Refused)\(\s*"([a-z_]+)"', path.read_text()))
    assert raised, "no ApiError raise site found"
    assert raised <= set(API_CODES), raised - set(API_CODES)


def test_a_misdirected_request_is_421_with_the_shared_body() -> None:
    error = MisdirectedRequest("this server does not answer to 'x'", host="x")
    assert error.code == "misdirected_request"
    assert status_of(error) == STATUS[MisdirectedRequest] == 421
    assert to_response(error).body == (
        b'{"error":{"code":"misdirected_request","message":"this server does not answer to '
        b'\'x\'","details":{"host":"x"}}}'
    )


@pytest.mark.parametrize(
    ("outcome", "code", "status"),
    [
        ("refused", "event_required", 409),
        ("refused", "spawn_depth_exceeded", 409),
        ("refused", "unauthorized_repository", 403),
        ("refused", "repository_access_revoked", 403),
        ("failed", "permission_not_granted", 403),
        ("refused", "unresolvable_ref", 422),
        ("refused", "invalid_ref", 422),
        ("refused", "unresolvable_text", 422),
        ("refused", "agent_not_found", 404),
        ("refused", "session_not_found", 404),
        ("refused", "idempotency_key_reused", 422),
        ("refused", "some_other_refusal", 409),
        ("failed", "configuration_error", 502),
        ("failed", "start_failed", 502),
    ],
)
def test_a_start_outcome_is_answered_from_the_same_table(
    outcome: str, code: str, status: int
) -> None:
    error = StartRefused.of(outcome, code, f"{code} happened", {"agent": "a"})
    response = to_response(error)
    assert response.status_code == status
    assert error.code == code
    assert error.details == {"outcome": outcome, "agent": "a"}


def test_start_refusals_are_classes_the_table_names() -> None:
    assert isinstance(
        StartRefused.of("refused", "unauthorized_repository", "no", {}), UnauthorizedRepository
    )
    assert isinstance(StartRefused.of("failed", "whatever", "no", {}), StartFailed)
    assert type(StartRefused.of("refused", "whatever", "no", {})) is StartRefused


def test_the_start_refusal_classes_are_made_from_one_code_table() -> None:
    for code, status in START_REFUSALS.items():
        error = StartRefused.of("refused", code, "no", {})
        assert type(error) is not StartRefused and type(error).code == code
        assert STATUS[type(error)] == status == to_response(error).status_code
    made = [cls for cls in STATUS if isinstance(cls, type) and issubclass(cls, StartRefused)]
    assert {cls.code for cls in made} == {*START_REFUSALS, "refused", "start_failed"}
    assert UnauthorizedRepository.__name__ == "UnauthorizedRepository"


def _raised_statuses(path: Path) -> list[str]:
    """`raise X(…)` calls in `path` that pass an HTTP status: an int 400-599, or `status=`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
            continue
        call = node.exc
        statuses = [
            a.value
            for a in call.args
            if isinstance(a, ast.Constant) and type(a.value) is int and 400 <= a.value < 600
        ]
        keywords = [k.arg for k in call.keywords if k.arg in ("status", "status_code")]
        if statuses or keywords:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_pure_packages_raise_codes_not_http_statuses() -> None:
    found = [
        place
        for package in ("templating", "agents", "triggers")
        for path in sorted((ROOT / package).rglob("*.py"))
        for place in _raised_statuses(path)
    ]
    assert found == []
    # the broker's refusals decided from the spec carry a kind, which the edge answers
    assert status_of(BrokerDenied("x", code="tool_not_granted")) == 403
    assert status_of(BrokerNotFound("x", code="unknown_tool")) == 404
    assert not hasattr(AccessDenied("x", code="tool_not_granted"), "status")
