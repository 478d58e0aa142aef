"""Triggers anyone can cause, spawning an agent that can write: warned unless a filter limits
who (the author association, or the sender)."""

from __future__ import annotations

from agents.model import Filter, Mount, Trigger
from agents.regex_bound import compile_bounded  # the trigger's pattern compiled already
from agents.schema import Sink, join
from agents.source import YNode, YSeq

__all__ = ["OPEN_EVENTS", "UNTRUSTED_ASSOCIATIONS", "limits_who", "warn_untrusted"]

#: Events any GitHub user can cause on a public repository: comments, issues, discussions,
#: reviews, and pull requests (from forks).
OPEN_EVENTS = {
    "commit_comment": "comment",
    "discussion": "discussion",
    "discussion_comment": "comment",
    "issue_comment": "comment",
    "issues": "issue",
    "pull_request": "pullRequest",
    "pull_request_review": "review",
    "pull_request_review_comment": "comment",
    "pull_request_review_thread": "pullRequest",
}  # event → the object whose authorAssociation says who wrote it
#: `author_association` values of people without a role in the repository
#: (https://docs.github.com/en/graphql/reference/enums#commentauthorassociation)
UNTRUSTED_ASSOCIATIONS = (
    "NONE",
    "FIRST_TIMER",
    "FIRST_TIME_CONTRIBUTOR",
    "CONTRIBUTOR",
    "MANNEQUIN",
)
_SENDER_PATHS = ("github.sender.login", "github.sender.id")
_FORK_PATH = "github.pullRequest.head.repo.fork"


def _admits(filter_: Filter, value: str) -> bool:
    """Whether an author-association value can pass the filter."""
    if filter_.op == "equals":
        return bool(filter_.value == value)
    if filter_.op == "in":
        return value in filter_.value
    if filter_.op == "matches":
        return compile_bounded(str(filter_.value)).search(value)
    return True  # exists


def limits_who(filter_: Filter) -> bool:
    """A filter on the sender, on an author association that admits no untrusted value, or
    one that leaves out pull requests from forks (a branch of the repository itself needs
    push access)."""
    if filter_.path == _FORK_PATH:
        return filter_.op == "equals" and filter_.value is False
    if filter_.path in _SENDER_PATHS:
        return filter_.op != "exists"
    if filter_.path.endswith(".authorAssociation"):
        return not any(_admits(filter_, value) for value in UNTRUSTED_ASSOCIATIONS)
    return False


def _writes(mounts: list[Mount]) -> list[str]:
    out = []
    for mount in mounts:
        if mount.auth.kind != "githubApp":
            continue
        granted = [k for k, v in mount.auth.capabilities.to_json().items() if v == "write"]
        if granted:
            out.append(f"{mount.mount_path} ({', '.join(granted)}: write)")
    return out


def warn_untrusted(
    sink: Sink, node: YNode | None, triggers: list[Trigger], mounts: list[Mount]
) -> None:
    """One warning per open-event trigger of an agent that can write, unless it limits who."""
    writes = _writes(mounts)
    if not writes or not isinstance(node, YSeq) or len(node.items) != len(triggers):
        return  # nothing to write with, or triggers with errors (reported already)
    for trigger in triggers:
        if trigger.event not in OPEN_EVENTS or any(limits_who(f) for f in trigger.filters):
            continue
        sink.warning(
            node.items[trigger.index].loc,
            join("triggers", trigger.index),
            f"anyone can cause {trigger.event!r} events, and this agent can write "
            f"({'; '.join(writes)}): add a filter on the author association (e.g. {{path: "
            f"github.{OPEN_EVENTS[trigger.event]}.authorAssociation, in: [OWNER, MEMBER, "
            "COLLABORATOR]}) or on github.sender.login",
        )
