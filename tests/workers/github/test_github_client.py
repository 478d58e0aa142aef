"""workers.github's client and token cache: githubkit over real HTTP to the GitHub stand-in."""

from __future__ import annotations

import logging
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.github_standin import GitHubStandin, key_pair, other_private_key_pem
from workers.errors import (
    AccessRevoked,
    ConfigurationError,
    GitHubUnavailable,
    TokenPermissionNotGranted,
    Transient,
)
from workers.github.client import GitHubApp, MintedToken, RemoteInstallation, RemoteRepository
from workers.github.token_cache import TokenCache
from workers.settings import Settings

APP_ID = "4242"
WRITE = {"contents": "write", "pull_requests": "write", "metadata": "read"}


@pytest.fixture
def gh() -> Iterator[GitHubStandin]:
    with GitHubStandin(app_id=APP_ID) as standin:
        standin.add_installation(
            7, "acme", repositories=[(101, "acme/api"), (102, "acme/web"), (103, "acme/ops")]
        )
        standin.add_installation(
            8, "beta", repositories=[(201, "beta/site")], permissions={"contents": "read"}
        )
        yield standin


@pytest.fixture
def app(gh: GitHubStandin) -> GitHubApp:
    return GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url, timeout=2.0)


class TestMint:
    def test_mint_sends_exactly_the_repositories_and_permissions(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        minted = app.mint_token(7, [102], WRITE)

        (request,) = gh.requests_to("access_tokens")
        assert request.method == "POST"
        assert request.path == "/app/installations/7/access_tokens"
        assert request.body == {"repository_ids": [102], "permissions": WRITE}
        assert request.headers["authorization"].startswith("Bearer ")
        assert gh.token_grant(minted.token) == (7, (102,), WRITE)
        assert minted.permissions == WRITE
        assert minted.repository_ids == (102,)
        assert minted.expires_at.tzinfo is not None
        assert minted.expires_at.utcoffset() == UTC.utcoffset(None)
        assert 3500 < (minted.expires_at - datetime.now(UTC)).total_seconds() <= 3600

    def test_permissions_go_out_unvalidated_by_githubkit(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        # githubkit's schema would reject `workflows: read`; the body must still be ours.
        with pytest.raises(TokenPermissionNotGranted):
            app.mint_token(8, [201], {"workflows": "read", "metadata": "read"})
        assert gh.requests_to("access_tokens")[0].body == {
            "repository_ids": [201],
            "permissions": {"workflows": "read", "metadata": "read"},
        }

    def test_no_repository_ids_means_the_whole_installation(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        app.mint_token(7, [], {"metadata": "read"})
        assert gh.requests_to("access_tokens")[0].body == {"permissions": {"metadata": "read"}}

    def test_empty_permissions_are_a_bug_not_a_request(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        with pytest.raises(ValueError, match="permissions"):
            app.mint_token(7, [101], {})
        assert gh.count() == 0

    def test_the_token_stays_out_of_the_repr(self, app: GitHubApp) -> None:
        minted = app.mint_token(7, [101], WRITE)
        assert minted.token.startswith("ghs_")
        assert minted.token not in repr(minted)
        assert minted.token not in str(minted)


class TestDefinitiveRefusals:
    def test_404_is_installation_deleted(self, gh: GitHubStandin, app: GitHubApp) -> None:
        with pytest.raises(AccessRevoked) as caught:
            app.mint_token(99, [101], WRITE)
        assert caught.value.kind == "installation_deleted"
        assert caught.value.installation_id == 99
        assert caught.value.code == "repository_access_revoked"
        assert gh.count("access_tokens") == 1

    def test_403_suspended_is_installation_suspended(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.suspend(7)
        with pytest.raises(AccessRevoked) as caught:
            app.mint_token(7, [101], WRITE)
        assert caught.value.kind == "installation_suspended"
        assert caught.value.installation_id == 7
        assert "suspended" in str(caught.value)

    def test_422_not_accessible_names_the_repositories(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.remove_repository(7, 102)
        with pytest.raises(AccessRevoked) as caught:
            app.mint_token(7, [102], WRITE)
        assert caught.value.kind == "repository_inaccessible"
        assert caught.value.repository_ids == (102,)
        assert caught.value.installation_id == 7
        assert "102" in str(caught.value)

    def test_422_permissions_is_permission_not_granted(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        with pytest.raises(TokenPermissionNotGranted) as caught:
            app.mint_token(8, [201], {"contents": "write", "metadata": "read"})
        assert caught.value.code == "permission_not_granted"
        assert "contents: write" in str(caught.value)
        assert caught.value.details["installation_id"] == 8
        assert not isinstance(caught.value, AccessRevoked)

    def test_a_403_with_exhausted_rate_limit_is_not_suspended(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.fail_next(
            "access_tokens", "primary_rate_limit", message="This installation has been suspended"
        )
        with pytest.raises(GitHubUnavailable):
            app.mint_token(7, [101], WRITE)


class TestConfigurationErrors:
    def test_wrong_private_key_is_a_401_configuration_error(self, gh: GitHubStandin) -> None:
        wrong = GitHubApp(app_id=APP_ID, private_key=other_private_key_pem(), api_url=gh.url)
        with pytest.raises(ConfigurationError) as caught:
            wrong.mint_token(7, [101], WRITE)
        assert "401" in str(caught.value)
        assert not isinstance(caught.value, AccessRevoked | Transient)
        assert gh.count("access_tokens") == 1

    def test_wrong_app_id_is_a_401_configuration_error(self, gh: GitHubStandin) -> None:
        wrong = GitHubApp(app_id="1", private_key=gh.private_key_pem, api_url=gh.url)
        with pytest.raises(ConfigurationError):
            wrong.list_installations()

    def test_injected_401_on_listing_is_a_configuration_error(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.fail_next("installations", "unauthorized")
        with pytest.raises(ConfigurationError):
            app.list_installations()

    def test_an_unusable_private_key_fails_at_construction(self, gh: GitHubStandin) -> None:
        with pytest.raises(ConfigurationError, match="private key"):
            GitHubApp(app_id=APP_ID, private_key="not a key", api_url=gh.url)
        assert gh.count() == 0


class TestTransientFailures:
    @pytest.mark.parametrize("status", [500, 502, 503])
    def test_5xx_is_unavailable_and_not_retried_by_githubkit(
        self, gh: GitHubStandin, app: GitHubApp, status: int
    ) -> None:
        gh.fail_next("access_tokens", status, times=5)
        with pytest.raises(GitHubUnavailable) as caught:
            app.mint_token(7, [101], WRITE)
        assert caught.value.retry_after is None
        assert str(status) in str(caught.value)
        assert gh.count("access_tokens") == 1  # auto_retry is off: we own retries

    @pytest.mark.parametrize("status", [403, 429])
    def test_primary_rate_limit_waits_until_reset(
        self, gh: GitHubStandin, app: GitHubApp, status: int
    ) -> None:
        gh.fail_next("access_tokens", "primary_rate_limit", status=status, reset_in=120)
        with pytest.raises(GitHubUnavailable) as caught:
            app.mint_token(7, [101], WRITE)
        assert caught.value.retry_after is not None
        assert 115 <= caught.value.retry_after <= 120
        assert "primary rate limit" in str(caught.value)

    @pytest.mark.parametrize("status", [403, 429])
    def test_secondary_rate_limit_honours_retry_after(
        self, gh: GitHubStandin, app: GitHubApp, status: int
    ) -> None:
        gh.fail_next("access_tokens", "secondary_rate_limit", status=status, retry_after=42)
        with pytest.raises(GitHubUnavailable) as caught:
            app.mint_token(7, [101], WRITE)
        assert caught.value.retry_after == 42
        assert "secondary rate limit" in str(caught.value)

    def test_secondary_rate_limit_by_message_only_waits_a_minute(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.fail_next("access_tokens", "secondary_rate_limit_message")
        with pytest.raises(GitHubUnavailable) as caught:
            app.mint_token(7, [101], WRITE)
        assert caught.value.retry_after == 60

    def test_a_retry_after_date_is_still_unavailable(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.fail_next(
            "access_tokens", "secondary_rate_limit", retry_after="Wed, 21 Oct 2015 07:28:00 GMT"
        )
        with pytest.raises(GitHubUnavailable, match="could not be read"):
            app.mint_token(7, [101], WRITE)

    def test_a_slow_github_times_out_quickly(self, gh: GitHubStandin) -> None:
        app = GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url, timeout=0.3)
        gh.fail_next("access_tokens", "timeout", delay=3.0)
        with pytest.raises(GitHubUnavailable, match="timeout"):
            app.mint_token(7, [101], WRITE)
        assert gh.count("access_tokens") == 1

    def test_nothing_listening_is_unavailable(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        app = GitHubApp(
            app_id=APP_ID, private_key=key_pair()[0], api_url=f"http://127.0.0.1:{port}"
        )
        with pytest.raises(GitHubUnavailable, match="could not reach GitHub"):
            app.mint_token(7, [101], WRITE)


class TestListing:
    def test_installations_across_pages(self) -> None:
        with GitHubStandin(app_id=APP_ID, max_per_page=2) as gh:
            gh.add_installation(3, "acme")
            gh.add_installation(4, "beta", suspended=True, repository_selection="all")
            gh.add_installation(5, "gamma")
            gh.add_installation(6, "delta")
            gh.add_installation(9, "epsilon")
            app = GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url)

            found = app.list_installations()

            assert [i.id for i in found] == [3, 4, 5, 6, 9]
            assert found[1] == RemoteInstallation(
                id=4, account="beta", suspended=True, repository_selection="all"
            )
            assert found[0].suspended is False
            pages = gh.requests_to("installations")
            assert len(pages) == 3
            assert pages[0].query == {"per_page": "100"}
            assert pages[2].query == {"per_page": "2", "page": "3"}

    def test_installation_repositories_across_pages(self) -> None:
        with GitHubStandin(app_id=APP_ID, max_per_page=2) as gh:
            repos = [(100 + n, f"acme/repo-{n}") for n in range(5)]
            gh.add_installation(7, "acme", repositories=repos)
            app = GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url)

            found = app.list_installation_repositories(7)

            assert found == [RemoteRepository(id=i, full_name=n) for i, n in repos]
            (mint,) = gh.requests_to("access_tokens")
            assert mint.body == {"permissions": {"metadata": "read"}}
            pages = gh.requests_to("installation_repositories")
            assert len(pages) == 3
            assert all(p.headers["authorization"].startswith("token ghs_") for p in pages)

    def test_listing_a_deleted_installation_is_revoked(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        with pytest.raises(AccessRevoked) as caught:
            app.list_installation_repositories(42)
        assert caught.value.kind == "installation_deleted"
        assert gh.count("installation_repositories") == 0

    def test_a_refused_installation_token_is_worth_a_retry(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        gh.fail_next("installation_repositories", "unauthorized")
        with pytest.raises(GitHubUnavailable, match="installation token was refused"):
            app.list_installation_repositories(7)
        assert [r.id for r in app.list_installation_repositories(7)] == [101, 102, 103]

    def test_a_listing_failure_midway_is_classified(self) -> None:
        with GitHubStandin(app_id=APP_ID, max_per_page=1) as gh:
            gh.add_installation(3, "acme")
            gh.add_installation(4, "beta")
            app = GitHubApp(app_id=APP_ID, private_key=gh.private_key_pem, api_url=gh.url)
            gh.fail_next("installations", "secondary_rate_limit", retry_after=5, after=1)
            with pytest.raises(GitHubUnavailable) as caught:
                app.list_installations()
            assert caught.value.retry_after == 5
            assert [r.query.get("page") for r in gh.requests_to("installations")] == [None, "2"]


class TestTokenSecrecy:
    def test_the_token_is_in_no_error_and_no_log_line(
        self, gh: GitHubStandin, app: GitHubApp, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG)
        gh.fail_next("installation_repositories", 500)
        with pytest.raises(GitHubUnavailable) as caught:
            app.list_installation_repositories(7)
        token = gh.requests_to("installation_repositories")[0].headers["authorization"].split()[1]
        assert token.startswith("ghs_")
        text = "".join(traceback.format_exception(caught.value))
        for shown in (str(caught.value), repr(caught.value), text, repr(caught.value.details)):
            assert token not in shown
        assert "minted installation token" in caplog.text
        assert token not in caplog.text


class TestFromSettings:
    def test_no_credentials_means_no_app(self) -> None:
        assert GitHubApp.from_settings(Settings(github_app_id=None)) is None

    def test_reads_the_key_file(self, gh: GitHubStandin, tmp_path: Path) -> None:
        key = tmp_path / "app.pem"
        key.write_text(gh.private_key_pem)
        settings = Settings(
            github_app_id=APP_ID, github_private_key_path=key, github_api_url=gh.url
        )
        app = GitHubApp.from_settings(settings)
        assert app is not None
        assert app.mint_token(7, [101], WRITE).repository_ids == (101,)

    def test_a_missing_key_file_is_a_configuration_error(self, tmp_path: Path) -> None:
        settings = Settings(github_app_id=APP_ID, github_private_key_path=tmp_path / "nope.pem")
        with pytest.raises(ConfigurationError, match=r"nope\.pem"):
            GitHubApp.from_settings(settings)


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class TestTokenCache:
    def test_hit_makes_no_request(self, gh: GitHubStandin, app: GitHubApp) -> None:
        cache = TokenCache(app.mint_token)
        first = cache.get(7, [101, 102], WRITE)
        again = cache.get(7, [102, 101], dict(reversed(WRITE.items())))
        assert again is first
        assert (cache.hits, cache.misses) == (1, 1)
        assert gh.count("access_tokens") == 1

    def test_each_scope_is_its_own_entry(self, gh: GitHubStandin, app: GitHubApp) -> None:
        cache = TokenCache(app.mint_token)
        a = cache.get(7, [101], WRITE)
        b = cache.get(7, [102], WRITE)
        c = cache.get(7, [101], {"contents": "read", "metadata": "read"})
        assert len({a.token, b.token, c.token}) == 3
        assert cache.misses == 3
        assert gh.count("access_tokens") == 3

    def test_refreshes_five_minutes_before_expiry(self, gh: GitHubStandin, app: GitHubApp) -> None:
        clock = Clock()
        cache = TokenCache(app.mint_token, clock=clock)
        first = cache.get(7, [101], WRITE)
        until = first.expires_at.timestamp()
        clock.now = until - 301
        assert cache.get(7, [101], WRITE) is first
        clock.now = until - 299
        second = cache.get(7, [101], WRITE)
        assert second.token != first.token
        assert (cache.hits, cache.misses) == (1, 2)
        assert gh.count("access_tokens") == 2

    def test_invalidate_installation(self, gh: GitHubStandin, app: GitHubApp) -> None:
        cache = TokenCache(app.mint_token)
        cache.get(7, [101], WRITE)
        cache.get(8, [201], {"contents": "read"})
        assert cache.invalidate_installation(7) == 1
        cache.get(7, [101], WRITE)
        cache.get(8, [201], {"contents": "read"})
        assert (cache.hits, cache.misses) == (1, 3)

    def test_a_revocation_drops_what_it_made_useless(
        self, gh: GitHubStandin, app: GitHubApp
    ) -> None:
        cache = TokenCache(app.mint_token)
        cache.get(7, [101], WRITE)
        gh.suspend(7)
        with pytest.raises(AccessRevoked):
            cache.get(7, [102], WRITE)
        with pytest.raises(AccessRevoked):  # the cached 101 token is gone too
            cache.get(7, [101], WRITE)
        assert cache.hits == 0
        assert len(cache) == 0

    def test_errors_are_not_cached(self, gh: GitHubStandin, app: GitHubApp) -> None:
        cache = TokenCache(app.mint_token)
        gh.fail_next("access_tokens", 503)
        with pytest.raises(GitHubUnavailable):
            cache.get(7, [101], WRITE)
        assert isinstance(cache.get(7, [101], WRITE), MintedToken)
        assert gh.count("access_tokens") == 2

    def test_concurrent_misses_mint_once(self, gh: GitHubStandin, app: GitHubApp) -> None:
        cache = TokenCache(app.mint_token)
        results: list[str] = []
        start = threading.Barrier(8)

        def worker() -> None:
            start.wait()
            results.append(cache.get(7, [101], WRITE).token)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert len(results) == 8
        assert len(set(results)) == 1
        assert gh.count("access_tokens") == 1
        assert (cache.hits, cache.misses) == (7, 1)
