"""Every Redis key hookspawn uses, in one place."""

from __future__ import annotations

PREFIX = "hookspawn"


# Deliveries ---------------------------------------------------------------
#: hash: event, action, repository, installationId, hookId, receivedAt, processedAt,
#: status, error (empty: none), body (the raw JSON packed by triggers.body_codec), claims,
#: attempts, runs (count) and `run:<n>` for n in 1..runs: the JSON record of each processing
#: run (outcomes, decisions, times)
def delivery(delivery_id: str) -> str:
    return f"{PREFIX}:delivery:{delivery_id}"


#: zset delivery id → received time (epoch seconds): the recent-deliveries index (trimmed to
#: the retention by the worker's upkeep)
DELIVERIES = f"{PREFIX}:deliveries"

#: zset delivery id → lease deadline (epoch seconds): deliveries not yet processed.
#: A delivery whose deadline has passed is lost work and is enqueued again by the sweep.
PENDING = f"{PREFIX}:pending"

#: hash delivery id → how often the sweep re-enqueued it since it was last processed or
#: replayed (dropped by the worker's upkeep once it is no longer pending, and by a replay)
SWEPT = f"{PREFIX}:swept"

#: zset delivery id → time it failed for good (dead letters, replayable; trimmed to the
#: retention by the worker's upkeep, as the records themselves expire)
DEAD = f"{PREFIX}:dead"

#: string with a TTL (the upkeep's interval): taken by the process running the index upkeep,
#: so one process trims the indexes per interval however many workers run
UPKEEP_LOCK = f"{PREFIX}:lock:upkeep"

#: string: the SCAN cursor where the index upkeep's walk over the per-agent session indexes
#: goes on (absent: from the start)
UPKEEP_CURSOR = f"{PREFIX}:upkeep:cursor"

#: string: the HSCAN cursor where the upkeep's walk over SWEPT goes on (absent: from the start)
UPKEEP_SWEPT_CURSOR = f"{PREFIX}:upkeep:swept-cursor"


#: string (owner token) with a TTL: the worker holding a delivery right now
def delivery_lock(delivery_id: str) -> str:
    return f"{PREFIX}:lock:delivery:{delivery_id}"


# Spawns and sessions -------------------------------------------------------
#: hash, for every session dispatched (either dispatcher): `spec` (its JSON without the input)
#: and either `input` (packed JSON; absent when none) or, for a trigger-spawned session, `event`,
#: `deliveryId` and `body` (the delivery's recorded body, which the input is rebuilt from)
def session(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}"


#: zset session id → created time: sessions, newest first (trimmed to the session retention
#: by the worker's upkeep)
SESSIONS = f"{PREFIX}:sessions"


#: zset session id → created time, per agent (trimmed like SESSIONS; gone once empty)
def agent_sessions(agent: str) -> str:
    return f"{PREFIX}:sessions:agent:{agent}"


#: SCAN MATCH pattern of every agent_sessions key
AGENT_SESSIONS_PATTERN = f"{PREFIX}:sessions:agent:*"


#: string with a TTL: SHA-256 of the body of the start that named this spawn id with its
#: `Idempotency-Key`, so the same key with a different body is refused, not answered with the
#: first session
def idempotency(session_id: str) -> str:
    return f"{PREFIX}:idempotency:{session_id}"


# The delivery explorer ---------------------------------------------------------
#: string with a TTL (the sign-in's lifetime): one /ui login, keyed by the SHA-256
#: of its cookie value; holds an HMAC of the admin token it was opened with
def ui_login(digest: str) -> str:
    return f"{PREFIX}:ui-session:{digest}"


#: string with a TTL: one GitHub App registration under way (`GET /github-app/new` issued it,
#: `GET /github-app/callback` takes it once); holds where the App is registered (JSON)
def github_app_state(state: str) -> str:
    return f"{PREFIX}:github-app-state:{state}"


#: hash: a locally run session's lifecycle: status, failure (JSON), workspace,
#: snapshotKey, snapshotScope and snapshot (its setup snapshot's key, scope and outcome),
#: owner (the runner holding it), cancel ("1" once asked), `<status>At` times and ttl (its
#: retention in seconds); expires with its session, never while a runner holds it
def session_run(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:run"


#: zset session id → lease deadline (epoch seconds): sessions a runner is staging or running.
#: A session whose deadline has passed lost its runner and is failed by the sweep.
RUNNER_LEASES = f"{PREFIX}:runner:leases"

#: zset session id → when it was queued (or last queued again by a runner's sweep): sessions
#: recorded `queued` and not yet taken by a runner
RUNNER_QUEUED = f"{PREFIX}:runner:queued"

#: the Celery queue of session runs (`hookspawn runner` consumes it, nothing else does)
SESSIONS_QUEUE = f"{PREFIX}.sessions"


# Connections -------------------------------------------------------------
#: hash installation id → JSON installation record (account, status, repositories)
INSTALLATIONS = f"{PREFIX}:installations"

#: string: a fresh random token written with every change to INSTALLATIONS (in the same
#: MULTI), so a process can keep the connections it read until the token changes
INSTALLATIONS_GENERATION = f"{PREFIX}:installations:generation"

# Metrics -------------------------------------------------------------------
#: hash: one field per metric series (JSON [name, part, *label values]) → its count or sum,
#: summed over every web and worker process (workers/metrics.py writes, the web reads)
METRICS = f"{PREFIX}:metrics"

#: list: the Celery queue itself (kombu's Redis transport keeps the queue `hookspawn` as a list
#: of that name; celery_app's task_default_queue). Not written by hookspawn: read for metrics.
CELERY_QUEUE = "hookspawn"


# The session broker --------------------------------------------------------
#: hash sha256(credential) hex → expiry (epoch seconds): the session credentials (the sandbox's
#: key to the broker) a session may present; never the credential itself. Deleted when the
#: session ends, however it ends; expires no later than the session record.
def session_credentials(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:credentials"


#: string: set by `POST /sessions/{id}/end` and by every script that writes a run's terminal
#: status (workers/session/runs.py), so no new credential is issued for an ended session (a
#: runner that takes it later gets none); expires with the session record (never before the
#: credential lifetime)
def session_ended(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:ended"


#: zset session id → when it ended (epoch seconds): sessions ended with live credentials, by
#: a status written without their broker (a lost runner's sweep, say), whose GitHub tokens the
#: web still revokes at GitHub; entries older than an hour (no token lives longer) are dropped
SESSIONS_UNREVOKED = f"{PREFIX}:sessions:unrevoked"


#: list of JSON audit entries, newest first and bounded: every credential and tool decision
#: of the broker for a session (never a token); expires the sessions' retention after the
#: newest entry
def session_audit(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:audit"


#: hash count, lastAt (ISO time): failed authentications against a session (a wrong, expired
#: or revoked credential), counted instead of audited so they never push real decisions out of
#: the audit; expires with the session's retention after the latest failure
def session_auth_failures(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:auth-failures"


#: string with a TTL (the rate limit's window): failed authentications against a session in the
#: current window; past the limit the broker answers 429 until the window ends
def session_auth_window(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:auth-window"


#: hash random field → a GitHub installation token minted for the session, sealed (AES-GCM)
#: under a key only the processes of one `hookspawn web --workers N` hold in memory, so any
#: of them reuses and revokes it and Redis never holds it readable; expires with the newest
#: token (workers/session/sealed_tokens.py)
def session_tokens(session_id: str) -> str:
    return f"{PREFIX}:session:{session_id}:tokens"
