"""HOOKSPAWN_RUNNER=local: each created session is queued for `hookspawn runner`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import redis

from triggers.session.spec import SessionSpec
from workers import keys
from workers.celery_app import make_celery
from workers.session.records import SessionStore
from workers.session.runner.roots import workspaces_root
from workers.session.runs import SessionRuns
from workers.session.status import SessionStatus
from workers.settings import Settings

__all__ = ["RUN_SESSION", "RunnerDispatcher", "runner_dispatcher"]

#: the Celery task a runner runs, one per session, on keys.SESSIONS_QUEUE
RUN_SESSION = "hookspawn.run_session"


class RunnerDispatcher:
    """Creates the session in hookspawn's own store, records it `queued` and hands it to the
    runners' queue. Each spawn goes through `dispatch` (not with its delivery's record), so a
    session is never stored without being queued; queuing again is harmless (a runner takes a
    session only while it is `queued`)."""

    local = False

    def __init__(
        self,
        sessions: SessionStore,
        runs: SessionRuns,
        workspaces: Path,
        enqueue: Callable[[str], None],
    ) -> None:
        """`workspaces`: where the runner makes session roots (`workspaces_root`)."""
        self.sessions, self.runs, self.enqueue = sessions, runs, enqueue
        self.workspaces = workspaces

    def dispatch(self, spec: SessionSpec) -> bool:
        # recorded `queued` before the session itself: a crash between the two leaves a run
        # record the next try completes; one after leaves a queued session, which a runner's
        # sweep queues again (SessionRuns.waiting_since)
        status = self.runs.queue(
            spec.id,
            workspace=str(self.workspaces / spec.id),
            ttl=self.sessions.retention_seconds,
        )
        created = self.sessions.create(spec)
        if status == SessionStatus.QUEUED:
            self.enqueue(spec.id)
        return created

    def abandon(self, session_id: str) -> None:
        """Nothing is handed out at dispatch: the runner issues a credential when it starts."""

    def close(self) -> None:
        """Nothing held: the queue's connections belong to its Celery app."""


def runner_dispatcher(
    settings: Settings, client: redis.Redis, sessions: SessionStore
) -> RunnerDispatcher:
    """The dispatcher of HOOKSPAWN_RUNNER=local, sending runs through its own Celery app."""
    target = settings.redis_target
    if target is None:
        raise ValueError(
            "HOOKSPAWN_RUNNER=local needs HOOKSPAWN_REDIS_URL or HOOKSPAWN_REDIS_SENTINELS "
            "(or `hookspawn serve`)"
        )
    celery = make_celery(target)

    def enqueue(session_id: str) -> None:
        celery.send_task(RUN_SESSION, args=[session_id], queue=keys.SESSIONS_QUEUE)

    return RunnerDispatcher(
        sessions,
        SessionRuns(client, credential_ttl=settings.session_credential_ttl),
        workspaces_root(settings),
        enqueue,
    )
