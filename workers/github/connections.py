"""The connections store in Redis (GitHub App installations and what they cover), and API sync.

One JSON record per installation id in the `keys.INSTALLATIONS` hash. Every change is a
read-modify-write under WATCH/MULTI, retried when another worker wrote first, so two workers
applying lifecycle events at the same time never lose one. The rules live in `lifecycle` and
`connection_sync`, beside this module.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import orjson
import redis

from triggers.coverage import Coverage
from workers import keys
from workers.errors import AccessRevoked, StoreUnavailable, WorkerError
from workers.github.client import GitHubApp, RemoteInstallation
from workers.github.connection_sync import mark_status, prune, replace_all, replace_one
from workers.github.installation import Change, Installation, State, SyncReport
from workers.github.lifecycle import LIFECYCLE_EVENTS, apply_event
from workers.github.manual_connections import add_manual, remove_manual
from workers.settings import Settings

__all__ = [
    "ConnectionStore",
    "resync_installation",
    "run_sync",
    "sync_from_github",
]

log = logging.getLogger(__name__)

R = TypeVar("R", Change, SyncReport)

#: optimistic-lock attempts before giving up (each loss means another writer made progress)
_ATTEMPTS = 100


class ConnectionStore:
    """Installations by id; coverage and installation choice for spawns."""

    def __init__(self, client: redis.Redis, *, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.clock = clock
        #: (generation, state) as last read; reused while the generation is unchanged
        self._read: tuple[bytes, State] | None = None

    # reading ------------------------------------------------------------------------------
    def all(self) -> list[Installation]:
        """Every known installation (deleted ones too), by id."""
        return [state for _, state in sorted(self._load().items())]

    def get(self, installation_id: int) -> Installation | None:
        raw = cast(bytes | None, self.client.hget(keys.INSTALLATIONS, str(installation_id)))
        return Installation.from_json(orjson.loads(raw)) if raw else None

    def covering(self, full_name: str) -> list[tuple[Installation, int]]:
        """Active installations that cover `full_name` (case-insensitive), with its repo id."""
        return self.snapshot().covering(full_name)

    def snapshot(self, generation: bytes | None = None) -> Coverage[Installation]:
        """Every installation as read now, for the pure coverage rules (triggers.coverage).

        `generation`: `keys.INSTALLATIONS_GENERATION` as the caller read it in one of its
        own round trips (the delivery claim reads it); when it is the one last read here, no
        read is made.
        """
        return Coverage(self._load(generation))

    def resolve(
        self,
        full_name: str,
        *,
        pinned: int | None,
        delivery_installation: int | None,
        generation: bytes | None = None,
    ) -> tuple[Installation, int] | None:
        """The installation a mount of `full_name` uses, with the repository id:
        `Coverage.resolve` over the current snapshot."""
        return self.snapshot(generation).resolve(
            full_name, pinned=pinned, delivery_installation=delivery_installation
        )

    # changing -----------------------------------------------------------------------------
    def apply_event(self, event: str, body: Mapping[str, Any]) -> Change:
        """Apply one lifecycle webhook (raw body); any other event changes nothing."""
        if event not in LIFECYCLE_EVENTS:
            return Change()
        return self._update(lambda state, now: apply_event(state, event, body, now=now))

    def mark_deleted(self, installation_id: int) -> Change:
        return self._update(lambda s, now: mark_status(s, installation_id, "deleted", now=now))

    def mark_suspended(self, installation_id: int) -> Change:
        return self._update(lambda s, now: mark_status(s, installation_id, "suspended", now=now))

    def prune(self, installation_id: int, repository_ids: Iterable[int]) -> Change:
        """Stop covering repositories GitHub refused a token for, until restored."""
        ids = [int(r) for r in repository_ids]
        return self._update(lambda s, now: prune(s, installation_id, ids, now=now))

    def replace_installation(self, installation_id: int, fresh: Installation | None) -> Change:
        """One installation as the API sees it now (None: GitHub no longer lists it)."""
        return self._update(lambda s, now: replace_one(s, installation_id, fresh, now=now))

    def replace_from_sync(self, installations: list[Installation]) -> SyncReport:
        """The API's truth replaces the stored set; installations it no longer lists: deleted."""
        return self._update(lambda s, now: replace_all(s, list(installations), now=now))

    def add_manual(self, full_name: str, installation_id: int | None) -> Change:
        """Cover `full_name` by a manual connection (workers.github.manual_connections)."""
        return self._update(lambda s, now: add_manual(s, full_name, installation_id, now=now))

    def remove_manual(self, full_name: str) -> Change:
        """End the manual connections' coverage of `full_name`."""
        return self._update(lambda s, now: remove_manual(s, full_name, now=now))

    def remove_if(self, installation_id: int, matches: Callable[[Installation], bool]) -> bool:
        """Remove the record of one installation when `matches` holds for it; whether it did."""

        def remove(state: State, now: float) -> Change:
            found = state.get(installation_id)
            change = Change()
            if found is not None and matches(found):
                del state[installation_id]
                change.installations.add(installation_id)
                change.summary.append(f"installation {installation_id} ({found.account}) removed")
            return change

        return bool(self._update(remove).installations)

    # internals ----------------------------------------------------------------------------
    def _load(self, generation: bytes | None = None) -> State:
        """Every installation; the copy read last when `generation` says nothing changed.

        The returned state is shared: callers only read it.
        """
        read = self._read
        if generation is not None and read is not None and read[0] == generation:
            return read[1]
        pipe = self.client.pipeline(transaction=True)
        pipe.get(keys.INSTALLATIONS_GENERATION)
        pipe.hgetall(keys.INSTALLATIONS)
        current, raw = pipe.execute()
        state = _parse(cast(dict[bytes, bytes], raw))
        self._read = (current, state) if current is not None else None
        return state

    def _update(self, change: Callable[[State, float], R]) -> R:
        """Read all, change, write back what changed, atomically against other writers."""
        for _ in range(_ATTEMPTS):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(keys.INSTALLATIONS)  # type: ignore[no-untyped-call]
                    before = cast(dict[bytes, bytes], pipe.hgetall(keys.INSTALLATIONS))
                    state = _parse(before)
                    result = change(state, self.clock())
                    records = {str(i): orjson.dumps(inst.to_json()) for i, inst in state.items()}
                    writes: dict[Any, bytes] = {
                        k: v for k, v in records.items() if before.get(k.encode()) != v
                    }
                    removed = [k for k in before if int(k) not in state]
                    pipe.multi()
                    if writes:
                        pipe.hset(keys.INSTALLATIONS, mapping=writes)
                    if removed:
                        pipe.hdel(keys.INSTALLATIONS, *removed)
                    if writes or removed:
                        pipe.set(keys.INSTALLATIONS_GENERATION, uuid.uuid4().hex)
                    pipe.execute()
                    self._read = None
                except redis.WatchError:
                    continue
            for line in result.summary:
                log.info("connections: %s", line)
            return result
        raise StoreUnavailable(
            f"connections: gave up after {_ATTEMPTS} concurrent-update conflicts on "
            f"{keys.INSTALLATIONS}"
        )


def _parse(raw: Mapping[bytes, bytes]) -> State:
    return {int(k): Installation.from_json(orjson.loads(v)) for k, v in raw.items()}


# the GitHub API ---------------------------------------------------------------------------
def _fetch(
    app: GitHubApp, remote: RemoteInstallation, known: Installation | None
) -> Installation | None:
    """One installation as the API lists it; None when GitHub says it is gone.

    A suspended installation cannot mint the token that lists its repositories: it keeps the
    stored lists (it covers nothing while suspended anyway).
    """
    fresh = Installation(
        id=remote.id,
        account=remote.account or (known.account if known else ""),
        status="suspended" if remote.suspended else "active",
        repository_selection="all" if remote.repository_selection == "all" else "selected",
        permissions=dict(known.permissions) if known else {},
    )
    if not remote.suspended:
        try:
            listed = app.list_installation_repositories(remote.id)
        except AccessRevoked as exc:
            if exc.kind == "installation_deleted":
                return None
            if exc.kind != "installation_suspended":
                raise
            fresh.status = "suspended"
        else:
            fresh.repositories = {r.id: r.full_name for r in listed}
            return fresh
    if known is not None:
        fresh.repositories, fresh.pruned = dict(known.repositories), dict(known.pruned)
    return fresh


def sync_from_github(store: ConnectionStore, app: GitHubApp) -> SyncReport:
    """Rebuild the store from the API: App JWT → installations → each one's repositories.

    Nothing is written unless every call succeeded (a GitHub failure raises and changes
    nothing). Permissions are kept from webhooks: the installation list does not carry them.
    """
    known = {i.id: i for i in store.all()}
    fresh = []
    for remote in app.list_installations():
        installation = _fetch(app, remote, known.get(remote.id))
        if installation is not None:
            fresh.append(installation)
    return store.replace_from_sync(fresh)


def resync_installation(store: ConnectionStore, app: GitHubApp, installation_id: int) -> Change:
    """Re-read one installation (after an event the webhook alone cannot settle)."""
    remote = next((r for r in app.list_installations() if r.id == installation_id), None)
    fresh = None if remote is None else _fetch(app, remote, store.get(installation_id))
    if fresh is None and store.get(installation_id) is None:
        return Change()
    return store.replace_installation(installation_id, fresh)


def run_sync(client: redis.Redis, settings: Settings) -> SyncReport:
    """`hookspawn connections sync` and `POST /connections/sync`: sync with the configured App.

    Raises WorkerError `github_not_configured` without App credentials, GitHubUnavailable when
    GitHub cannot be reached, ConfigurationError when it refuses the App's credentials.
    """
    app = GitHubApp.from_settings(settings)
    if app is None:
        raise WorkerError(
            "no GitHub App is configured: set HOOKSPAWN_GITHUB_APP_ID and "
            "HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH to sync connections from the GitHub API "
            "(without them, connections come from lifecycle webhooks only)",
            code="github_not_configured",
        )
    return sync_from_github(ConnectionStore(client), app)
