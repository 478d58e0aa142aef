"""Failed authentications are counted per session, never audited, and rate-limited per session."""

from __future__ import annotations

import pytest
import redis

from tests.workers.session.broker.conftest import BrokerEnv, Session
from workers import keys
from workers.session.audit import FAILURE_LIMIT, SessionAudit

pytestmark = pytest.mark.slow


def test_600_bad_credentials_leave_the_audit_intact_and_later_ones_get_429(
    broker_env: BrokerEnv,
) -> None:
    reader = broker_env.start("reader")
    assert broker_env.git_credential(reader, mountPath="/workspace/widgets").status_code == 200
    assert broker_env.tool(reader, "create_or_update_file", "acme/widgets").status_code == 403
    before = broker_env.client.get(f"/sessions/{reader.id}").json()
    assert before["failedAuthentications"] == {"count": 0, "lastAt": None}
    real = before["audit"]
    assert len(real) == 3

    wrong = Session(reader.id, "not-the-credential")
    statuses = []
    for n in range(600):
        if n % 2:
            answer = broker_env.git_credential(wrong, mountPath="/workspace/widgets")
        else:
            answer = broker_env.tool(wrong, "get_issue", "acme/widgets")
        statuses.append(answer.status_code)
    assert statuses[:FAILURE_LIMIT] == [401] * FAILURE_LIMIT
    assert set(statuses[FAILURE_LIMIT:]) == {429}
    limited = broker_env.git_credential(wrong, mountPath="/workspace/widgets")
    assert limited.json()["error"]["code"] == "too_many_failures"
    assert 1 <= int(limited.headers["retry-after"]) <= 60

    after = broker_env.client.get(f"/sessions/{reader.id}").json()
    assert after["audit"] == real
    assert after["failedAuthentications"]["count"] == 601
    assert after["failedAuthentications"]["lastAt"].endswith("Z")
    # the session's own credential still works: the limit locks out no one who holds it
    assert broker_env.git_credential(reader, mountPath="/workspace/widgets").status_code == 200
    # another session is not limited by this one's failures
    other = broker_env.start("reader")
    refused = broker_env.git_credential(Session(other.id, "nope"), mountPath="/workspace/widgets")
    assert refused.status_code == 401


def test_the_failure_window_ends_and_unknown_sessions_get_no_record(
    redis_client: redis.Redis,
) -> None:
    audit = SessionAudit(redis_client, failure_limit=2, failure_window=30)
    assert [audit.failed_authentication("s1", "git") for _ in range(2)] == [None, None]
    assert 1 <= (audit.failed_authentication("s1", "git") or 0) <= 30
    assert audit.failures("s1")["count"] == 3
    redis_client.delete(keys.session_auth_window("s1"))  # the window ended
    assert audit.failed_authentication("s1", "tool") is None
    assert audit.failures("s1")["count"] == 4
    assert audit.entries("s1") == []
    assert audit.failures("never") == {"count": 0, "lastAt": None}
