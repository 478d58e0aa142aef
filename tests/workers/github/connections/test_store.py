"""The connections store on a real Redis: persistence, resolution order, pruning, concurrency."""

from __future__ import annotations

import threading
from typing import Any

import orjson
import redis

from tests.conftest import command_calls
from tests.workers.github.connections.conftest import Payload
from workers import keys
from workers.github.connections import ConnectionStore
from workers.github.installation import Installation

ACME, OTHER = 7, 9


def added(installation_id: int, *repos: tuple[int, str], account: str = "acme") -> dict[str, Any]:
    """An `installation_repositories` added body (the recorded shape, trimmed to what matters)."""
    return {
        "action": "added",
        "installation": {
            "id": installation_id,
            "account": {"login": account, "type": "Organization"},
            "repository_selection": "selected",
        },
        "repository_selection": "selected",
        "repositories_added": [{"id": i, "full_name": name} for i, name in repos],
        "repositories_removed": [],
    }


def seed(store: ConnectionStore, installation_id: int, *repos: tuple[int, str]) -> None:
    store.replace_installation(
        installation_id, Installation(id=installation_id, account="acme", repositories=dict(repos))
    )


def test_apply_event_persists_one_record_per_installation(
    store: ConnectionStore, client: redis.Redis, payload: Payload
) -> None:
    change = store.apply_event("installation", payload("installation/created"))
    assert change.installations == {957387}
    raw = client.hget(keys.INSTALLATIONS, "957387")
    assert isinstance(raw, bytes)
    assert orjson.loads(raw)["repositories"] == [
        {"id": 186853002, "fullName": "Codertocat/Hello-World"}
    ]
    fresh = ConnectionStore(client)  # another process reading the same Redis
    found = fresh.get(957387)
    assert found is not None and found.covers("codertocat/hello-world") == 186853002
    assert [i.id for i in fresh.all()] == [957387]
    assert fresh.get(1) is None


def test_non_lifecycle_event_writes_nothing(store: ConnectionStore, client: redis.Redis) -> None:
    change = store.apply_event("pull_request", {"action": "opened", "installation": {"id": 3}})
    assert not change
    assert client.exists(keys.INSTALLATIONS) == 0


def test_covering_lists_active_installations_only(store: ConnectionStore) -> None:
    seed(store, OTHER, (1, "acme/api"))
    seed(store, ACME, (1, "acme/api"), (2, "acme/web"))
    store.mark_suspended(OTHER)
    assert [(i.id, r) for i, r in store.covering("ACME/api")] == [(ACME, 1)]
    assert store.covering("acme/missing") == []
    store.mark_deleted(ACME)
    assert store.covering("acme/api") == []
    deleted = store.get(ACME)
    assert deleted is not None and deleted.status == "deleted"


class TestResolve:
    def test_pinned_installation_is_used_when_it_covers(self, store: ConnectionStore) -> None:
        seed(store, ACME, (1, "acme/api"))
        seed(store, OTHER, (1, "acme/api"))
        found = store.resolve("acme/api", pinned=OTHER, delivery_installation=ACME)
        assert found is not None and (found[0].id, found[1]) == (OTHER, 1)

    def test_pinned_installation_not_covering_gives_none_never_another(
        self, store: ConnectionStore
    ) -> None:
        seed(store, ACME, (1, "acme/api"))
        seed(store, OTHER, (2, "acme/web"))
        assert store.resolve("acme/api", pinned=OTHER, delivery_installation=ACME) is None
        store.mark_suspended(OTHER)
        assert store.resolve("acme/web", pinned=OTHER, delivery_installation=None) is None

    def test_unknown_pinned_id_is_never_used(self, store: ConnectionStore) -> None:
        seed(store, ACME, (1, "acme/api"))
        assert store.resolve("acme/api", pinned=12345, delivery_installation=ACME) is None

    def test_delivery_installation_before_the_lowest_covering(self, store: ConnectionStore) -> None:
        seed(store, ACME, (1, "acme/api"))
        seed(store, OTHER, (1, "acme/api"))
        found = store.resolve("acme/api", pinned=None, delivery_installation=OTHER)
        assert found is not None and found[0].id == OTHER

    def test_lowest_covering_when_the_delivery_installation_does_not_cover(
        self, store: ConnectionStore
    ) -> None:
        seed(store, 3, (5, "acme/web"))
        seed(store, OTHER, (1, "acme/api"))
        seed(store, ACME, (1, "acme/api"))
        for delivery_installation in (3, 4242, None):
            found = store.resolve(
                "acme/api", pinned=None, delivery_installation=delivery_installation
            )
            assert found is not None and found[0].id == ACME

    def test_suspended_delivery_installation_is_passed_over(self, store: ConnectionStore) -> None:
        seed(store, ACME, (1, "acme/api"))
        seed(store, OTHER, (1, "acme/api"))
        store.mark_suspended(ACME)
        found = store.resolve("acme/api", pinned=None, delivery_installation=ACME)
        assert found is not None and found[0].id == OTHER

    def test_nothing_covering(self, store: ConnectionStore) -> None:
        seed(store, ACME, (1, "acme/api"))
        assert store.resolve("acme/else", pinned=None, delivery_installation=ACME) is None


def test_pruned_repository_stops_covering_until_added_again(store: ConnectionStore) -> None:
    seed(store, ACME, (1, "acme/api"), (2, "acme/web"))
    change = store.prune(ACME, [1])
    assert change.installations == {ACME}
    assert store.resolve("acme/api", pinned=None, delivery_installation=ACME) is None
    assert store.covering("acme/web") != []
    record = store.get(ACME)
    assert record is not None
    assert record.to_json()["pruned"] == [{"id": 1, "fullName": "acme/api"}]
    # a second refusal for the same repository changes nothing
    assert not store.prune(ACME, [1])
    store.apply_event("installation_repositories", added(ACME, (1, "acme/api")))
    found = store.resolve("acme/api", pinned=None, delivery_installation=None)
    assert found is not None and found[0].id == ACME


def test_suspend_then_unsuspend_webhook_restores_coverage(
    store: ConnectionStore, payload: Payload
) -> None:
    body = payload("installation/unsuspend")
    seed(store, 16598467, (1, "Codertocat/api"))
    store.mark_suspended(16598467)
    assert store.covering("Codertocat/api") == []
    store.apply_event("installation", body)
    assert [i.id for i, _ in store.covering("Codertocat/api")] == [16598467]


def test_concurrent_events_lose_no_update(redis_url: str) -> None:
    """Eight workers, each with its own connection, adding 25 repositories one event at a time."""
    threads, per_thread = 8, 25
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def worker(n: int) -> None:
        client = redis.Redis.from_url(redis_url)
        try:
            own = ConnectionStore(client)
            start.wait()
            for k in range(per_thread):
                repo_id = n * 1000 + k + 1  # GitHub ids are positive
                own.apply_event(
                    "installation_repositories", added(ACME, (repo_id, f"acme/r{repo_id}"))
                )
                if k % 5 == 0:  # interleave writes to a second installation as well
                    own.apply_event(
                        "installation_repositories", added(OTHER, (repo_id, f"acme/r{repo_id}"))
                    )
        except BaseException as exc:
            errors.append(exc)
        finally:
            client.close()

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(60)
    assert errors == []
    reader = ConnectionStore(redis.Redis.from_url(redis_url))
    acme, other = reader.get(ACME), reader.get(OTHER)
    assert acme is not None and other is not None
    assert len(acme.repositories) == threads * per_thread
    assert len(other.repositories) == threads * (per_thread // 5)
    assert acme.covers("acme/r7025") == 7025
    reader.client.close()


def _generation(client: redis.Redis) -> bytes | None:
    value = client.get(keys.INSTALLATIONS_GENERATION)
    assert value is None or isinstance(value, bytes)
    return value


def test_a_read_is_reused_until_the_generation_changes(
    store: ConnectionStore, client: redis.Redis
) -> None:
    seed(store, ACME, (1, "acme/api"))
    reader = ConnectionStore(client)  # another process
    generation = _generation(client)
    assert isinstance(generation, bytes)
    found = reader.resolve("acme/api", pinned=None, delivery_installation=None)
    assert found is not None and found[1] == 1
    before = command_calls(client, "hgetall")
    for _ in range(3):
        again = reader.resolve(
            "acme/api", pinned=None, delivery_installation=None, generation=generation
        )
        assert again is not None and again[0].id == ACME
    assert command_calls(client, "hgetall") == before  # nothing read: the generation said no change
    # another process changes the connections: the next generation makes the reader look
    store.prune(ACME, [1])
    changed = _generation(client)
    assert changed != generation
    before = command_calls(client, "hgetall")
    found = reader.resolve("acme/api", pinned=None, delivery_installation=None, generation=changed)
    assert found is None
    assert command_calls(client, "hgetall") == before + 1
    # without a generation the store always reads
    assert reader.resolve("acme/api", pinned=None, delivery_installation=None) is None
    assert command_calls(client, "hgetall") == before + 2


def test_a_store_emptied_and_refilled_is_read_again(
    store: ConnectionStore, client: redis.Redis
) -> None:
    seed(store, ACME, (1, "acme/api"))
    reader = ConnectionStore(client)
    old = _generation(client)
    assert reader.resolve("acme/api", pinned=None, delivery_installation=None, generation=old)
    client.flushdb()  # everything gone, the generation too
    assert _generation(client) is None
    assert (
        reader.resolve("acme/api", pinned=None, delivery_installation=None, generation=None) is None
    )
    seed(store, ACME, (2, "acme/web"))
    now = _generation(client)
    assert now is not None and now != old  # a fresh random token, never a reused count
    assert (
        reader.resolve("acme/api", pinned=None, delivery_installation=None, generation=now) is None
    )
    assert reader.resolve("acme/web", pinned=None, delivery_installation=None, generation=now)
