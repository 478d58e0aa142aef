"""Wires one process together from Settings: Redis client, stores, Celery app, tasks, pipeline,
the session credentials and audit, and the credential broker with its session tokens."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from functools import cached_property
from typing import cast

import redis
from celery import Celery
from celery.utils.nodenames import anon_nodename

from workers.agents_source import AgentsSource, ChangeWatch
from workers.celery_app import PROCESS_DELIVERY, make_celery
from workers.delivery.credential_handover import CredentialHandover
from workers.delivery.deliveries import DeliveryStore
from workers.delivery.dispatch import Dispatcher, EmbeddedDispatcher, HttpDispatcher
from workers.delivery.pipeline import SpawnPipeline
from workers.delivery.processing import DeliveryProcessor, Pipeline
from workers.delivery.task_message import TaskMessages
from workers.github.client import GitHubApp
from workers.github.connections import ConnectionStore
from workers.github.token_cache import TokenCache
from workers.redis_connection import redis_client
from workers.redis_target import RedisTarget, ReplicaAck
from workers.session.audit import SessionAudit
from workers.session.broker import Broker
from workers.session.credentials import SessionCredentials
from workers.session.records import SessionStore, SpawnRecords
from workers.session.runner.queue import runner_dispatcher
from workers.session.sealed_tokens import SealedTokens
from workers.session.stores import SessionStores
from workers.session.tokens import SessionTokens
from workers.settings import Settings
from workers.tasks import register_tasks

log = logging.getLogger(__name__)


def build_pipeline(
    settings: Settings, client: redis.Redis, *, agents_watch: ChangeWatch | None = None
) -> SpawnPipeline:
    """The spawn pipeline with everything it needs, for this process (`agents_watch`: the
    worker's one watch of the agent files, shared by its pool processes)."""
    return _spawn_pipeline(
        settings, client, GitHubApp.from_settings(settings), agents_watch=agents_watch
    )


def _spawn_pipeline(
    settings: Settings,
    client: redis.Redis,
    github: GitHubApp | None,
    *,
    agents_watch: ChangeWatch | None = None,
) -> SpawnPipeline:
    sessions = SessionStore(client, retention=settings.sessions_kept, ack=settings.replica_ack)
    dispatcher: Dispatcher
    if settings.dispatch_url:
        # a spec handed over carries its session's broker credential
        credentials = SessionCredentials(
            client,
            ttl=settings.session_credential_ttl,
            audit=SessionAudit(client, retention=settings.sessions_kept),
        )
        dispatcher = CredentialHandover(
            HttpDispatcher(
                settings.dispatch_url, sessions=sessions, secret=settings.dispatch_secret
            ),
            credentials,
        )
    elif settings.runner == "local":
        # the local runner issues a session its credential when it starts it
        dispatcher = runner_dispatcher(settings, client, sessions)
    else:
        dispatcher = EmbeddedDispatcher(sessions)
    return SpawnPipeline(
        agents=AgentsSource(
            settings.agents_dir, secret_names=settings.secret_names, watch=agents_watch
        ),
        connections=ConnectionStore(client),
        dispatcher=dispatcher,
        spawns=SpawnRecords(client),
        github=github,
        tokens=TokenCache(github.mint_token) if github else None,
        broker_url=settings.broker_base_url,
    )


#: builds a process's pipeline from its Redis client and its GitHub App (None: no App)
PipelineFactory = Callable[[redis.Redis, GitHubApp | None], Pipeline]


class PerProcess:
    """Builds the Redis client, the GitHub App, the pipeline and the session tokens lazily,
    once per (forked) process. With `token_key` the session tokens are held sealed in Redis
    under it, shared with the other processes given that key (workers.session.sealed_tokens)."""

    def __init__(
        self,
        settings: Settings,
        target: RedisTarget,
        pipeline: PipelineFactory,
        token_key: bytes | None = None,
    ) -> None:
        self.settings, self.target, self._make_pipeline = settings, target, pipeline
        self._token_key = token_key
        self._pid = -1
        self._lock = threading.Lock()
        self._client: redis.Redis | None = None
        self._processor: DeliveryProcessor | None = None
        self._pipeline: Pipeline | None = None
        self._tokens: SessionTokens | None = None

    def _ensure(self) -> None:
        if self._processor is not None and self._pid == os.getpid():
            return
        # a pool process runs one task at a time: one connection serves its commands (the
        # lease keeper's and the metrics flusher's rare ones wait on the client's lock)
        client = self._client = redis_client(self.target, single_connection=True)
        store = DeliveryStore(
            client,
            retention=self.settings.retention,
            lease=self.settings.lease_seconds,
            max_attempts=self.settings.max_retries + 1,
            session_retention=self.settings.sessions_kept,
            ack=self.settings.replica_ack,
        )
        github = GitHubApp.from_settings(self.settings)
        self._pipeline = self._make_pipeline(client, github)
        # the broker's session tokens mint with the App the pipeline mints with
        shared = SealedTokens(client, self._token_key) if self._token_key else None
        self._tokens = (
            SessionTokens(github.mint_token, github.revoke_token, shared=shared) if github else None
        )
        self._processor = DeliveryProcessor(store, self._pipeline)
        self._pid = os.getpid()

    def processor(self) -> DeliveryProcessor:
        with self._lock:
            self._ensure()
            assert self._processor is not None
            return self._processor

    def pipeline(self) -> Pipeline:
        with self._lock:
            self._ensure()
            assert self._pipeline is not None
            return self._pipeline

    def tokens(self) -> SessionTokens | None:
        """The GitHub tokens minted for sessions in this process (None: no GitHub App)."""
        with self._lock:
            self._ensure()
            return self._tokens

    def close(self) -> None:
        """Close this process's pipeline (its dispatcher) and Redis connection; the next use
        builds them again."""
        with self._lock:
            pipeline, client = self._pipeline, self._client
            self._pipeline = self._processor = self._client = None
        if pipeline is not None:
            pipeline.close()
        if client is not None:
            client.close()


class Runtime:
    """Everything a web or worker process needs, built once from Settings."""

    def __init__(
        self,
        settings: Settings,
        *,
        redis_url: str | None = None,
        pipeline: Pipeline | Callable[[redis.Redis], Pipeline] | None = None,
        agents_watch: ChangeWatch | None = None,
        token_key: bytes | None = None,
    ) -> None:
        target = redis_url or settings.redis_target
        if not target:
            raise ValueError(
                "no Redis: set HOOKSPAWN_REDIS_URL (or HOOKSPAWN_REDIS_SENTINELS with "
                "HOOKSPAWN_REDIS_SENTINEL_MASTER) or use `hookspawn serve`"
            )
        self.settings = settings
        #: where the store is: a URL, or the primary its sentinels name
        self.redis: RedisTarget = target
        #: the store's URL (None: found through sentinels)
        self.redis_url: str | None = target if isinstance(target, str) else None
        #: how many replicas must hold a delivery's record before intake answers 202
        self.ack: ReplicaAck = settings.replica_ack
        if settings.dispatch_url and not settings.dispatch_secret:
            log.warning(
                "HOOKSPAWN_DISPATCH_SECRET is not set: POSTs to HOOKSPAWN_DISPATCH_URL (%s) go "
                "unsigned, without X-Hookspawn-Signature-256",
                settings.dispatch_url,
            )
        self.client = redis_client(target)
        self.store = DeliveryStore(
            self.client,
            retention=settings.retention,
            lease=settings.lease_seconds,
            max_attempts=settings.max_retries + 1,
            session_retention=settings.sessions_kept,
            ack=self.ack,
        )
        self.connections = ConnectionStore(self.client)
        stores = SessionStores(self.client, settings)
        self.sessions, self.audit = stores.sessions, stores.audit
        self.credentials, self.runs = stores.credentials, stores.runs
        self.celery: Celery = make_celery(target)
        factory: PipelineFactory
        if pipeline is None:

            def factory(client: redis.Redis, github: GitHubApp | None) -> Pipeline:
                return _spawn_pipeline(settings, client, github, agents_watch=agents_watch)

        elif hasattr(pipeline, "run"):
            fixed = cast(Pipeline, pipeline)
            factory = lambda client, github: fixed  # noqa: E731
        else:
            make = pipeline
            factory = lambda client, github: make(client)  # noqa: E731
        self.per_process = PerProcess(settings, target, factory, token_key)
        self.task_messages = TaskMessages(
            task=PROCESS_DELIVERY,
            queue=str(self.celery.conf.task_default_queue),
            origin=anon_nodename(),
            reply_to=str(self.celery.thread_oid),
        )
        self.process_delivery = register_tasks(
            self.celery,
            self.per_process.processor,
            max_retries=settings.max_retries,
            backoff_floor=settings.retry_backoff_floor,
        )

    @property
    def pipeline(self) -> Pipeline:
        return self.per_process.pipeline()

    @cached_property
    def broker(self) -> Broker:
        """The credential broker, built on first use (its session tokens mint with this
        process's GitHub App); the web process uses it, never forked."""
        return Broker(
            sessions=self.sessions,
            credentials=self.credentials,
            audit=self.audit,
            connections=self.connections,
            tokens=self.per_process.tokens(),
            rewrites=self.settings.git_url_rewrite,
            unmounted=self.settings.unmounted_capabilities,
        )

    def enqueue(self, delivery_id: str) -> None:
        """Queue a delivery's task (replay, sweep): the message the intake script pushes too,
        from the one builder, onto the list a worker pops it from (kombu's Redis transport)."""
        messages = self.task_messages
        self.client.lpush(messages.queue, messages(delivery_id))

    def close(self) -> None:
        """Release the process's connections: the pipeline's dispatcher, Redis."""
        self.per_process.close()
        self.client.close()

    def close_forked(self) -> None:
        """What a forked pool process releases as it exits: only what it built itself
        (`per_process`). `client` is the parent's: the parent's threads (the sweeper) use it,
        and a lock one of them held at the fork stays held in the child for ever; redis-py
        takes its pool's lock to reset a pool in a forked process, so closing `client` there
        could wait for ever and the pool process would never exit."""
        self.per_process.close()


def build_runtime(
    settings: Settings,
    *,
    redis_url: str | None = None,
    pipeline: Pipeline | Callable[[redis.Redis], Pipeline] | None = None,
    agents_watch: ChangeWatch | None = None,
    token_key: bytes | None = None,
) -> Runtime:
    """`token_key`: the sealing key of the session tokens the processes of one
    `hookspawn web --workers N` share (None: this process holds its own in memory)."""
    return Runtime(
        settings,
        redis_url=redis_url,
        pipeline=pipeline,
        agents_watch=agents_watch,
        token_key=token_key,
    )
