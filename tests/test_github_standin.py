"""The GitHub stand-in itself, over plain HTTP: auth checks, token grants, pagination, failures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import jwt
import pytest

from tests import loopback
from tests.github_standin import GitHubStandin, key_pair, other_private_key_pem

APP_ID = "4242"


@pytest.fixture
def gh() -> Iterator[GitHubStandin]:
    with GitHubStandin(app_id=APP_ID, max_per_page=2) as standin:
        standin.add_installation(
            7, "acme", repositories=[(101, "acme/api"), (102, "acme/web"), (103, "acme/ops")]
        )
        standin.add_installation(8, "beta", permissions={"contents": "read"})
        yield standin


def app_jwt(
    key: str, *, iss: str = APP_ID, lifetime: int = 540, iat_offset: int = -60
) -> dict[str, str]:
    now = int(time.time()) + iat_offset
    token = jwt.encode({"iss": iss, "iat": now, "exp": now + lifetime}, key, algorithm="RS256")
    return {"Authorization": f"Bearer {token}"}


def mint(gh: GitHubStandin, installation_id: int, body: object) -> httpx.Response:
    return loopback.post(
        f"{gh.url}/app/installations/{installation_id}/access_tokens",
        json=body,
        headers=app_jwt(gh.private_key_pem),
    )


class TestAppJwt:
    def test_a_valid_jwt_is_accepted(self, gh: GitHubStandin) -> None:
        answer = loopback.get(f"{gh.url}/app", headers=app_jwt(gh.private_key_pem))
        assert answer.status_code == 200
        assert answer.json()["id"] == int(APP_ID)

    @pytest.mark.parametrize(
        "headers",
        [
            pytest.param({}, id="missing"),
            pytest.param({"Authorization": "Bearer not.a.jwt"}, id="garbage"),
            pytest.param(app_jwt(other_private_key_pem()), id="other-key"),
            pytest.param(app_jwt(key_pair()[0], iss="999"), id="other-app"),
            pytest.param(app_jwt(key_pair()[0], lifetime=900), id="too-long"),
            pytest.param(app_jwt(key_pair()[0], iat_offset=-1200), id="expired"),
        ],
    )
    def test_a_bad_jwt_is_refused(self, gh: GitHubStandin, headers: dict[str, str]) -> None:
        answer = loopback.get(f"{gh.url}/app/installations", headers=headers)
        assert answer.status_code == 401
        assert "message" in answer.json()

    def test_installation_routes_want_an_issued_token_not_a_jwt(self, gh: GitHubStandin) -> None:
        answer = loopback.get(
            f"{gh.url}/installation/repositories", headers=app_jwt(gh.private_key_pem)
        )
        assert answer.status_code == 401
        assert answer.json()["message"] == "Bad credentials"


class TestAccessTokens:
    def test_a_token_is_issued_for_what_was_asked(self, gh: GitHubStandin) -> None:
        answer = mint(gh, 7, {"repository_ids": [102], "permissions": {"contents": "read"}})
        assert answer.status_code == 201
        body = answer.json()
        assert body["permissions"] == {"contents": "read"}
        assert body["repository_selection"] == "selected"
        assert [r["full_name"] for r in body["repositories"]] == ["acme/web"]
        # GitHub's exact timestamp shape, about an hour ahead
        expires = datetime.strptime(body["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert 3590 < (expires - datetime.now(UTC)).total_seconds() <= 3600
        assert gh.token_grant(body["token"]) == (7, (102,), {"contents": "read"})

    def test_the_token_lists_only_its_repositories(self, gh: GitHubStandin) -> None:
        token = mint(gh, 7, {"repository_ids": [103, 101], "permissions": {"metadata": "read"}})
        answer = loopback.get(
            f"{gh.url}/installation/repositories",
            headers={"Authorization": f"token {token.json()['token']}"},
        )
        assert answer.status_code == 200
        assert [r["id"] for r in answer.json()["repositories"]] == [103, 101]
        assert answer.json()["total_count"] == 2

    def test_unknown_installation_is_404(self, gh: GitHubStandin) -> None:
        assert mint(gh, 99, {"permissions": {"metadata": "read"}}).status_code == 404

    def test_suspended_installation_is_403_suspended(self, gh: GitHubStandin) -> None:
        gh.suspend(7)
        answer = mint(gh, 7, {"permissions": {"metadata": "read"}})
        assert answer.status_code == 403
        assert answer.json()["message"] == "This installation has been suspended"
        assert answer.headers["x-ratelimit-remaining"] != "0"

    def test_repository_outside_the_installation_is_422(self, gh: GitHubStandin) -> None:
        answer = mint(gh, 7, {"repository_ids": [101, 555], "permissions": {"metadata": "read"}})
        assert answer.status_code == 422
        assert "not accessible to the parent installation" in answer.json()["message"]

    @pytest.mark.parametrize("permissions", [{"contents": "write"}, {"issues": "read"}])
    def test_permission_beyond_the_grant_is_422(
        self, gh: GitHubStandin, permissions: dict[str, str]
    ) -> None:
        answer = mint(gh, 8, {"permissions": permissions})
        assert answer.status_code == 422
        assert answer.json()["message"].startswith("The permissions requested are not granted")

    def test_a_deleted_installation_revokes_its_tokens(self, gh: GitHubStandin) -> None:
        token = mint(gh, 7, {"permissions": {"metadata": "read"}}).json()["token"]
        gh.delete_installation(7)
        answer = loopback.get(
            f"{gh.url}/installation/repositories", headers={"Authorization": f"token {token}"}
        )
        assert answer.status_code == 401

    def test_expired_tokens_are_refused(self) -> None:
        with GitHubStandin(app_id=APP_ID, token_ttl=0) as gh:
            gh.add_installation(7, "acme", repositories=[(101, "acme/api")])
            token = mint(gh, 7, {"permissions": {"metadata": "read"}}).json()["token"]
            answer = loopback.get(
                f"{gh.url}/installation/repositories",
                headers={"Authorization": f"token {token}"},
            )
            assert answer.status_code == 401


class TestPaginationAndRecording:
    def test_installations_page_with_link_headers(self, gh: GitHubStandin) -> None:
        gh.add_installation(9, "gamma")
        first = loopback.get(f"{gh.url}/app/installations", headers=app_jwt(gh.private_key_pem))
        assert [i["id"] for i in first.json()] == [7, 8]
        assert first.links["next"]["url"].endswith("per_page=2&page=2")
        assert first.links["last"]["url"].endswith("page=2")
        second = loopback.get(first.links["next"]["url"], headers=app_jwt(gh.private_key_pem))
        assert [i["id"] for i in second.json()] == [9]
        assert "next" not in second.links
        assert second.links["prev"]["url"].endswith("page=1")

    def test_every_request_is_recorded(self, gh: GitHubStandin) -> None:
        assert gh.count() == 0
        mint(gh, 7, {"repository_ids": [101], "permissions": {"metadata": "read"}})
        loopback.get(f"{gh.url}/nowhere")
        assert gh.count() == 2
        assert gh.count("access_tokens") == 1
        recorded = gh.requests[0]
        assert (recorded.method, recorded.path, recorded.route) == (
            "POST",
            "/app/installations/7/access_tokens",
            "access_tokens",
        )
        assert recorded.body == {"repository_ids": [101], "permissions": {"metadata": "read"}}
        assert recorded.headers["authorization"].startswith("Bearer ")
        assert gh.requests[1].route is None


class TestInjectedFailures:
    def test_fail_next_answers_n_times_then_recovers(self, gh: GitHubStandin) -> None:
        gh.fail_next("access_tokens", 502, times=2)
        statuses = [mint(gh, 7, {"permissions": {"metadata": "read"}}).status_code for _ in "abc"]
        assert statuses == [502, 502, 201]

    def test_primary_rate_limit_headers(self, gh: GitHubStandin) -> None:
        gh.fail_next("access_tokens", "primary_rate_limit", reset_in=90)
        before = int(time.time())
        answer = mint(gh, 7, {"permissions": {"metadata": "read"}})
        after = time.time()
        assert answer.status_code == 403
        assert answer.headers["x-ratelimit-remaining"] == "0"
        # 90 s from when it answered, however long the answer took
        assert before + 90 <= int(answer.headers["x-ratelimit-reset"]) <= after + 90

    def test_secondary_rate_limit_headers(self, gh: GitHubStandin) -> None:
        gh.fail_next("access_tokens", "secondary_rate_limit", retry_after=17, status=429)
        answer = mint(gh, 7, {"permissions": {"metadata": "read"}})
        assert answer.status_code == 429
        assert answer.headers["retry-after"] == "17"
        assert "secondary rate limit" in answer.json()["message"]

    def test_a_delay_outlasts_the_client_timeout(self, gh: GitHubStandin) -> None:
        gh.fail_next("installations", "timeout", delay=2.0)
        with pytest.raises(httpx.ReadTimeout):
            loopback.get(
                f"{gh.url}/app/installations", headers=app_jwt(gh.private_key_pem), timeout=0.2
            )

    def test_a_failure_can_wait_its_turn(self, gh: GitHubStandin) -> None:
        gh.fail_next("access_tokens", "not_found", after=1)
        statuses = [mint(gh, 7, {"permissions": {"metadata": "read"}}).status_code for _ in "abc"]
        assert statuses == [201, 404, 201]

    def test_failures_are_per_route(self, gh: GitHubStandin) -> None:
        gh.fail_next("installations", "server_error")
        assert mint(gh, 7, {"permissions": {"metadata": "read"}}).status_code == 201
        listed = loopback.get(f"{gh.url}/app/installations", headers=app_jwt(gh.private_key_pem))
        assert listed.status_code == 500

    def test_unknown_route_or_kind_is_a_test_bug(self, gh: GitHubStandin) -> None:
        with pytest.raises(ValueError, match="unknown route"):
            gh.fail_next("access_token", "suspended")
        with pytest.raises(ValueError, match="unknown failure kind"):
            gh.fail_next("access_tokens", "suspend")


class TestHookDeliveries:
    def test_deliveries_newest_first_with_cursor(self, gh: GitHubStandin) -> None:
        for n in (1, 2, 3):
            gh.add_hook_delivery(n, guid=f"guid-{n}", event="push", installation_id=7)
        first = loopback.get(f"{gh.url}/app/hook/deliveries", headers=app_jwt(gh.private_key_pem))
        assert [d["guid"] for d in first.json()] == ["guid-3", "guid-2"]
        second = loopback.get(first.links["next"]["url"], headers=app_jwt(gh.private_key_pem))
        assert [d["id"] for d in second.json()] == [1]
        assert "next" not in second.links

    def test_redelivery_attempts(self, gh: GitHubStandin) -> None:
        gh.add_hook_delivery(5, guid="g5", event="issues", action="opened")
        auth = app_jwt(gh.private_key_pem)
        assert loopback.post(
            f"{gh.url}/app/hook/deliveries/5/attempts", headers=auth
        ).status_code == (202)
        assert loopback.post(
            f"{gh.url}/app/hook/deliveries/6/attempts", headers=auth
        ).status_code == (404)
        assert gh.redelivered == [5]
