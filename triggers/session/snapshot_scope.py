"""Which setup snapshots a session may restore and where it saves one, scoped by trust the way
GitHub Actions scopes caches: branches save into their own scope; pull-request code saves only
into its pull request's, and may read its base branch's; a privileged session never reads a
snapshot pull-request code saved (https://docs.github.com/en/actions/reference/dependency-caching-reference#restrictions-for-accessing-a-cache)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agents.environment_spec import EnvValue, secret_refs

__all__ = [
    "PULL_REF",
    "Candidate",
    "Checkout",
    "ScopePlan",
    "ScopedMount",
    "classify",
    "may_restore",
    "plan_scopes",
    "privileges",
    "secret_names",
]


class ScopedMount(Protocol):
    """What the scopes read of a session spec's mount (triggers.session.spec.SessionMount)."""

    @property
    def repository(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def mount_path(self) -> str: ...
    @property
    def ref(self) -> str | None: ...
    @property
    def auth(self) -> str: ...
    @property
    def capabilities(self) -> Mapping[str, str] | None: ...
    @property
    def event_dependent(self) -> bool: ...


#: a pull request's head or merge ref, fully qualified or as git's fetch resolves a short name
PULL_REF = re.compile(r"(?:refs/)?pull/([0-9]+)/(?:head|merge)")
#: what an unmounted session (nothing checked out) saves into
UNMOUNTED = "unmounted"


@dataclass(frozen=True)
class Checkout:
    """What one mount checks out: a branch (or a ref the agent's authors wrote) of its
    repository, a pull request's code, or another ref the event named."""

    kind: Literal["branch", "pull", "ref"]
    repository: str
    ref: str
    #: the pull request's number (kind `pull`)
    number: int | None = None
    #: the pull request's base branch, when the event names it (kind `pull`)
    base: str | None = None

    @property
    def trusted(self) -> bool:
        return self.kind == "branch"

    @property
    def part(self) -> str:
        return f"{self.repository}#{self.number}" if self.kind == "pull" else self.label

    @property
    def label(self) -> str:
        return f"{self.repository}@{self.ref}"


@dataclass(frozen=True)
class Candidate:
    """A scope to look in, and each mount's ref to compute the key with there."""

    scope: str
    refs: tuple[str | None, ...]


@dataclass(frozen=True)
class ScopePlan:
    #: where this session saves its snapshot
    save: str
    #: where it may restore one from, first hit wins
    restore: tuple[Candidate, ...]
    #: whether it runs pull-request code (what it saves is marked so)
    pull_request_code: bool
    #: why it is privileged (write, merge, workflows, secrets, `$secret`); empty: it is not
    privileged: tuple[str, ...]
    #: the secrets its env names: setup may have left them in the home it saves
    secrets: tuple[str, ...] = ()


def _get(value: Any, *path: str) -> Any:
    for name in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


def _same(a: Any, b: str) -> bool:
    return isinstance(a, str) and a.lower() == b.lower()


def _pull_request(github: Mapping[str, Any]) -> tuple[str | None, int | None, str | None]:
    """The event's pull request: (its repository, number, base branch), parts unknown None."""
    pull = github.get("pullRequest")
    if isinstance(pull, Mapping) and type(pull.get("number")) is int:
        base = pull.get("base")
        base_ref = _get(base, "ref")
        return (
            _get(base, "repo", "fullName") or _get(github, "repository", "fullName"),
            pull["number"],
            base_ref if isinstance(base_ref, str) else None,
        )
    issue = github.get("issue")
    if isinstance(issue, Mapping) and issue.get("pullRequest") and type(issue.get("number")) is int:
        return _get(github, "repository", "fullName"), issue["number"], None
    return None, None, None


def _branches_of(repository: str, github: Mapping[str, Any]) -> set[str]:
    """Branch names the event itself shows to be branches of `repository`."""
    found: set[str] = set()
    if _same(_get(github, "repository", "fullName"), repository):
        ref = github.get("ref")
        if isinstance(ref, str) and ref.startswith("refs/heads/"):
            found.add(ref.removeprefix("refs/heads/"))  # push
        elif isinstance(ref, str) and github.get("refType") == "branch":
            found.add(ref)  # create, delete
        default = _get(github, "repository", "defaultBranch")
        if isinstance(default, str):
            found.add(default)
    for side in ("base", "head"):
        end = _get(github, "pullRequest", side)
        if _same(_get(end, "repo", "fullName"), repository) and isinstance(_get(end, "ref"), str):
            found.add(end["ref"])
    return found


def classify(mount: ScopedMount, github: Mapping[str, Any]) -> Checkout:
    """What `mount` (a session spec's mount) checks out, given the event (`payload.github`).

    A pull request's ref is pull-request code. A ref the event supplied (`eventDependent`)
    counts as a branch only when the event shows it is one of the mount's repository; any
    other (a commit, a fork's branch, a tag) is treated as pull-request code too. A ref the
    agent's authors wrote is theirs."""
    repository = mount.repository or mount.url
    ref = mount.ref
    pull_repo, number, base = _pull_request(github)
    ours = _same(pull_repo, repository)
    found = PULL_REF.fullmatch(ref or "")
    if found:
        own = int(found.group(1))
        return Checkout("pull", repository, str(ref), own, base if ours and own == number else None)
    if not mount.event_dependent:
        return Checkout("branch", repository, ref or "HEAD")
    name = str(ref).removeprefix("refs/heads/")
    if name in _branches_of(repository, github):
        return Checkout("branch", repository, name)
    if ours and number is not None:
        return Checkout("pull", repository, str(ref), number, base)
    return Checkout("ref", repository, str(ref))


def privileges(mounts: Sequence[ScopedMount], env: Sequence[Mapping[str, EnvValue]]) -> list[str]:
    """Why a session is privileged: a capability at write (merge included), `workflows` or
    `secrets` granted at all, or an env value that is a `$secret` (`env`: each env layer)."""
    reasons = []
    for mount in mounts:
        capabilities = mount.capabilities if mount.auth == "githubApp" else None
        for name, level in (capabilities or {}).items():
            if level == "write" or (name in ("workflows", "secrets") and level != "none"):
                reasons.append(f"{mount.mount_path} {name}: {level}")
    reasons.extend(f"env {name}: $secret" for name, _ in secret_refs(env))
    return reasons


def secret_names(env: Sequence[Mapping[str, EnvValue]]) -> tuple[str, ...]:
    """The secrets the env layers name (`$secret`), sorted, once each."""
    return tuple(sorted({ref.secret for _, ref in secret_refs(env)}))


def _scope(kind: str, parts: Sequence[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return f"{kind}:{', '.join(unique)}" if unique else UNMOUNTED


def plan_scopes(
    mounts: Sequence[ScopedMount],
    env: Sequence[Mapping[str, EnvValue]],
    session_input: Mapping[str, Any] | None,
) -> ScopePlan:
    """Where a session (its spec's mounts, env layers and input) saves its snapshot and where
    it may restore one from."""
    github = _get(session_input, "payload", "github")
    checkouts = [classify(m, github if isinstance(github, Mapping) else {}) for m in mounts]
    own_refs = tuple(m.ref for m in mounts)
    reasons = tuple(privileges(mounts, env))
    secrets = secret_names(env)
    untrusted = [c for c in checkouts if not c.trusted]
    if not untrusted:
        save = _scope("branch", [c.label for c in checkouts])
        return ScopePlan(save, (Candidate(save, own_refs),), False, reasons, secrets)
    kind = "pull" if any(c.kind == "pull" for c in untrusted) else "ref"
    save = _scope(kind, [c.part for c in untrusted])
    restore = [] if reasons else [Candidate(save, own_refs)]
    if all(c.kind == "pull" and c.base for c in untrusted):
        base = [
            c if c.trusted else Checkout("branch", c.repository, str(c.base)) for c in checkouts
        ]
        refs = tuple(r if c.trusted else c.base for r, c in zip(own_refs, checkouts, strict=True))
        restore.append(Candidate(_scope("branch", [c.label for c in base]), refs))
    return ScopePlan(save, tuple(restore), True, reasons, secrets)


def may_restore(plan: ScopePlan, candidate: Candidate, saved: Mapping[str, Any]) -> bool:
    """Whether a snapshot saved with `saved` (its record: `scope`, `pullRequestCode`,
    `secrets`) may be restored into the session `plan` is for, looked up in `candidate`: it
    must be of that scope; a privileged session never takes one pull-request code saved; and
    no session takes one saved by a setup given a secret it is not given itself (setup may
    have written it into the home)."""
    if saved.get("scope") != candidate.scope or candidate not in plan.restore:
        return False
    if plan.privileged and saved.get("pullRequestCode") is not False:
        return False
    secrets = saved.get("secrets") or []
    return isinstance(secrets, list) and set(map(str, secrets)) <= set(plan.secrets)
