"""The HTTP API's answers as pydantic models, for the OpenAPI document and checks.

Each model describes what a route already returns: camelCase keys through the alias
generator, nullable fields required when the route always sends them, keys a route sends only
sometimes optional (routes declare `response_model_exclude_unset=True`, so a default never
adds a key). Every view allows extra keys (more fields are welcome), so validating a
route's answer never drops or refuses a key; only the shared error body (`error_models`) is
closed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agents.environment_spec import EnvironmentResource, EnvValue
from triggers.session.spec import SessionSpec
from workers.session.runs import SessionWithRun

__all__ = [
    "AgentList",
    "ConnectionList",
    "DeliveryList",
    "DeliveryView",
    "ExplainAnswer",
    "Health",
    "IntakeAnswer",
    "JsonSchemaDocument",
    "Queued",
    "Readiness",
    "SessionList",
    "SessionRef",
    "SessionSpec",
    "SessionView",
    "SyncReportView",
]

DeliveryStatus = Literal["queued", "processed", "failed"]
OutcomeKind = Literal["dispatched", "refused", "suppressed", "failed"]
Condition = Literal["event", "action", "repository", "branch", "bots", "filter"]


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="allow")


# -- intake and replay --------------------------------------------------------------------------


class ExistingSession(_View):
    """A session a replayed delivery dispatched before: it exists, and is not run again."""

    session_id: str
    agent: str | None = None
    session_status: str | None = Field(None, description="its status now (local runner)")


class Queued(_View):
    """A delivery accepted for (another) run through the pipeline."""

    delivery_id: str
    status: Literal["queued"]
    existing_sessions: list[ExistingSession] | None = Field(
        None, description="replay: the sessions already dispatched, which are not run again"
    )


class IntakeAnswer(_View):
    """200 at intake: a duplicate delivery id (nothing recorded again), or a queued ping."""

    delivery_id: str
    status: Literal["queued", "duplicate"]


# -- deliveries ---------------------------------------------------------------------------------


class OutcomeView(_View):
    """How one (agent, trigger) spawn ended."""

    agent: str
    trigger: int | None = Field(description="the trigger's index in the agent file")
    trigger_key: str | None
    outcome: OutcomeKind
    code: str | None = Field(description="the refusal or failure code; null when dispatched")
    message: str
    session_id: str | None
    details: dict[str, Any]
    session_status: str | None = Field(
        None,
        description="dispatched: the session's status now when a local runner runs it "
        "(queued, staging, setup, running, succeeded, failed, cancelled); absent otherwise",
    )
    session_failure: str | None = Field(
        None, description="the session's failure code when it failed (e.g. runner_lost)"
    )


class DeliverySummary(_View):
    """One delivery record (an item of GET /deliveries)."""

    delivery_id: str
    event: str
    action: str | None
    repository: str | None = Field(description="owner/name")
    installation_id: int | None
    hook_id: str | None
    status: DeliveryStatus
    received_at: str | None = Field(description="ISO 8601, UTC")
    processed_at: str | None = Field(description="ISO 8601, UTC; null until the first run")
    error: str | None = Field(description="why processing gave up (status failed)")
    attempts: int = Field(
        0, description="claims by a worker since it was recorded or last replayed (bounded)"
    )
    outcomes: list[OutcomeView] | None = Field(
        None, description="the latest run's outcomes (each dispatched one with sessionStatus)"
    )


class TriggerDecision(_View):
    """Whether one trigger fired for the event, or the first condition that failed."""

    agent: str
    trigger: int = Field(description="the trigger's index in the agent file")
    key: str
    name: str | None
    fires: bool
    failed: Condition | None
    detail: str | None


class DecisionView(_View):
    """One entry of a run's decision log (loose: the pipeline decides what it records).

    The spawn pipeline records one entry per trigger of the event (the keys of a trigger
    decision) and, first, `{"connections": [...]}` when a lifecycle event changed connections.
    """

    agent: str | None = None
    trigger: int | None = None
    key: str | None = None
    name: str | None = None
    fires: bool | None = None
    failed: Condition | None = None
    detail: str | None = None
    connections: list[str] | None = Field(None, description="what a lifecycle event changed")


class RunView(_View):
    """One pass of the pipeline over the delivery (a replay adds another)."""

    run: int | None = Field(description="1 for the first run; null when processing gave up")
    started_at: str | None
    finished_at: str
    status: DeliveryStatus
    outcomes: list[OutcomeView]
    decisions: list[DecisionView]
    error: str | None = Field(None, description="the failure code, when processing gave up")
    agents_generation: str | None = Field(
        None, description="the generation of the agent set that decided (GET /agents)"
    )


class DeliveryView(DeliverySummary):
    """GET /deliveries/{id}: the record, the latest run's outcomes and decisions, every run."""

    outcomes: list[OutcomeView]
    decisions: list[DecisionView]
    runs: list[RunView]
    agents_generation: str | None = Field(
        None, description="the generation of the agent set that decided the latest run"
    )


class DeliveryList(_View):
    items: list[DeliverySummary] = Field(description="newest first")


# -- sessions -----------------------------------------------------------------------------------


class SessionList(_View):
    items: list[SessionWithRun] = Field(description="newest first")


class AuditEntry(_View):
    """One broker decision on a session (never a token)."""

    at: str
    kind: Literal["git", "tool", "session"]
    result: Literal["allowed", "denied"]
    code: str | None = None
    repository: str | None = None
    mount_path: str | None = None
    tool: str | None = None
    #: the `method` of a tool taking one (pull_request_read, actions_run_trigger, …)
    method: str | None = None
    permissions: dict[str, str] | None = None
    message: str | None = None


class FailedAuthentications(_View):
    """Requests to the broker with a wrong, expired or revoked credential for this session:
    counted, never put in the audit."""

    count: int
    last_at: str | None = None


class SessionView(SessionWithRun):
    """GET /sessions/{id}: the session, how its local run stands (HOOKSPAWN_RUNNER=local), and
    the broker's decisions on it, newest first."""

    audit: list[AuditEntry] = Field(default_factory=list)
    failed_authentications: FailedAuthentications | None = None


class SessionRef(_View):
    """A dispatched session the store does not hold (only its id is known)."""

    id: str


class JsonSchemaDocument(_View):
    """A JSON Schema (draft 2020-12) document."""

    title: str
    type: str
    properties: dict[str, Any]
    required: list[str] = Field(default_factory=list)
    defs: dict[str, Any] = Field(default_factory=dict, alias="$defs")


# -- agents -------------------------------------------------------------------------------------


class AgentAuth(_View):
    kind: Literal["none", "githubApp"]
    installation_id: str | None
    commit_author: dict[str, str] | None
    capabilities: dict[str, str] = Field(description="capability → none | read | write")
    default_capabilities: list[str] = Field(
        default_factory=list,
        description="the capabilities the file left to their defaults (githubApp mounts)",
    )


class AgentMount(_View):
    kind: str
    repository: str
    github_repository: str | None
    mount_path: str
    ref: str | None = Field(description="as written; may hold {{ tokens }}")
    depth: int
    auth: AgentAuth
    event_dependent: bool


class AgentTrigger(_View):
    index: int
    key: str
    kind: str
    event: str
    actions: list[str] | None
    repositories: list[str] | None
    branches: list[str] | None
    filters: list[dict[str, Any]]
    name: str | None
    bots: bool
    display_title: str | None
    initial_prompt: str | None
    message: str | None


class AgentView(_View):
    """One compiled agent file (loose: the compiled form is rich; these keys are documented)."""

    name: str
    harness: str
    environment: str
    environment_resource: EnvironmentResource
    mounts: list[AgentMount]
    triggers: list[AgentTrigger]
    working_directory: str | None
    system_prompt: str | None
    tools: list[dict[str, Any]]
    env: dict[str, EnvValue]
    event_dependent: bool
    source_file: str


class AgentList(_View):
    items: list[AgentView]
    errors: list[str] = Field(
        description="why files on disk do not compile, if so: what they name is left out"
    )
    directory: str | None = Field(None, description="absent when there is no spawn pipeline")
    generation: str | None = Field(
        None,
        description="a hash of the loaded set: a delivery's agentsGeneration names the one "
        "that decided it (absent when there is no spawn pipeline)",
    )


# -- connections --------------------------------------------------------------------------------


class RepositoryRef(_View):
    id: int
    full_name: str


class InstallationView(_View):
    id: int
    account: str
    status: Literal["active", "suspended", "deleted"]
    repository_selection: Literal["all", "selected"]
    repositories: list[RepositoryRef]
    pruned: list[RepositoryRef] = Field(description="refused by GitHub until an event or sync")
    permissions: dict[str, str]
    updated_at: str | None
    manual: bool = Field(
        default=False,
        description="recorded by `connections add`: no GitHub installation, no token minted",
    )
    demo: bool = Field(
        default=False,
        description="the demo connection `serve --demo` records (a `serve` without --demo "
        "removes it): no GitHub installation, no token minted",
    )


class ConnectionList(_View):
    items: list[InstallationView]


class SyncReportView(_View):
    """What replacing the stored connections with the GitHub API's answer did."""

    installations: int
    repositories: int
    added: list[int]
    deleted: list[int]
    changed: list[int]
    restored: list[str]
    summary: list[str]


# -- explain ------------------------------------------------------------------------------------


class ExplainFilter(_View):
    """The first filter that did not hold."""

    index: int
    path: str
    op: str
    expected: Any
    present: bool
    actual: Any


class ExplainCoverage(_View):
    """A githubApp mount's repository: the installation covering it, or why none does."""

    mount_path: str
    repository: str
    covered: bool
    reason: str | None = None
    installation_id: int | None = None
    account: str | None = None
    repository_id: int | None = None
    permissions: dict[str, str] | None = None
    token: str | None = None
    warning: str | None = None


class ExplainRef(_View):
    mount_path: str
    repository: str
    ref: str | None


class ExplainTexts(_View):
    display_title: str | None
    initial_prompt: str | None
    message: str | None


class ExplainPlan(_View):
    """The steps the pipeline would take, up to the first refusal or suppression."""

    session_id: str
    outcome: OutcomeKind
    code: str | None
    message: str
    already_dispatched: str | None = None
    coverage: list[ExplainCoverage] | None = None
    refs: list[ExplainRef] | None = None
    texts: ExplainTexts | None = None
    details: dict[str, Any] | None = None


class ExplainTrigger(TriggerDecision):
    event: str
    filter: ExplainFilter | None = None
    plan: ExplainPlan | None = None


class ExplainSummary(_View):
    agents: int
    triggers: int
    fire: int
    outcomes: dict[str, int] = Field(description="planned outcome → how many triggers")


class ExplainAnswer(_View):
    event: str
    action: str | None
    repository: str | None
    sender: str | None
    delivery_id: str
    summary: ExplainSummary
    triggers: list[ExplainTrigger]
    notes: list[str]


# -- health -------------------------------------------------------------------------------------


class Health(_View):
    status: Literal["ok"]


class Readiness(_View):
    status: Literal["ok", "unavailable"]
    store: str = Field(description='"ok" or "unreachable: <why>"')
    broker: str = Field(description='"ok" or "unreachable: <why>"')
