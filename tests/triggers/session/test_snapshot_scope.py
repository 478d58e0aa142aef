"""Which snapshots a session may restore and where it saves one: scopes by trust."""

from __future__ import annotations

from typing import Any

from agents.environment_spec import EnvValue, SecretRef
from triggers.session.snapshot_scope import Candidate, may_restore, plan_scopes, privileges
from triggers.session.spec import SessionMount

REPO = "acme/widgets"
READ = {"contents": "read", "pullRequests": "read", "issues": "none"}


def _mount(ref: str | None, *, event: bool = False, **capabilities: str) -> SessionMount:
    return SessionMount.model_validate(
        {
            "repository": REPO,
            "url": f"https://github.com/{REPO}.git",
            "mountPath": "/workspace/widgets",
            "ref": ref,
            "depth": 1,
            "auth": "githubApp",
            "capabilities": {**READ, **capabilities},
            "eventDependent": event,
        }
    )


def _pull_event(*, head_repo: str = "someone/widgets", number: int = 2) -> dict[str, Any]:
    return {
        "payload": {
            "github": {
                "event": "pull_request",
                "repository": {"fullName": REPO, "defaultBranch": "main"},
                "pullRequest": {
                    "number": number,
                    "base": {"ref": "main", "repo": {"fullName": REPO}},
                    "head": {"ref": "patch-1", "sha": "f" * 40, "repo": {"fullName": head_repo}},
                },
            }
        }
    }


def test_a_branch_saves_into_and_restores_from_its_own_scope() -> None:
    plan = plan_scopes([_mount("main", contents="write")], [], None)
    assert plan.save == "branch:acme/widgets@main"
    assert plan.restore == (Candidate("branch:acme/widgets@main", ("main",)),)
    assert not plan.pull_request_code
    assert plan.privileged == ("/workspace/widgets contents: write",)


def test_a_pull_request_head_saves_into_its_pull_request_and_reads_its_base() -> None:
    plan = plan_scopes([_mount("refs/pull/2/head")], [], _pull_event())
    assert plan.pull_request_code and not plan.privileged
    assert plan.save == "pull:acme/widgets#2"
    assert plan.restore == (
        Candidate("pull:acme/widgets#2", ("refs/pull/2/head",)),
        Candidate("branch:acme/widgets@main", ("main",)),  # the key as the base branch has it
    )


def test_a_privileged_pull_request_session_reads_only_its_base_branch() -> None:
    cases: tuple[tuple[SessionMount, dict[str, EnvValue]], ...] = (
        (_mount("refs/pull/2/head", pullRequests="write"), {}),
        (_mount("refs/pull/2/head", merge="write"), {}),
        (_mount("refs/pull/2/head", workflows="read"), {}),
        (_mount("refs/pull/2/head", secrets="read"), {}),
        (_mount("refs/pull/2/head"), {"NPM_TOKEN": SecretRef(secret="npm", optional=True)}),
    )
    for mount, env in cases:
        plan = plan_scopes([mount], [{"PLAIN": "x"}, env], _pull_event())
        assert plan.privileged, (mount, env)
        assert plan.save == "pull:acme/widgets#2"
        assert [c.scope for c in plan.restore] == ["branch:acme/widgets@main"]


def test_refs_the_event_names_are_branches_only_when_it_shows_they_are() -> None:
    fork = _pull_event()
    # a fork's branch: pull-request code
    assert plan_scopes([_mount("patch-1", event=True)], [], fork).save == "pull:acme/widgets#2"
    # the same name as a branch the event shows the repository has: that branch
    assert plan_scopes([_mount("main", event=True)], [], fork).save == "branch:acme/widgets@main"
    # the head commit: pull-request code
    assert plan_scopes([_mount("f" * 40, event=True)], [], fork).save == "pull:acme/widgets#2"
    # a branch of the repository itself (the head of a pull request from within it)
    inside = _pull_event(head_repo=REPO)
    inside["payload"]["github"]["pullRequest"]["head"]["ref"] = "feature"
    plan = plan_scopes([_mount("feature", event=True)], [], inside)
    assert (plan.save, plan.pull_request_code) == ("branch:acme/widgets@feature", False)
    # the base branch, and a push's branch
    assert plan_scopes([_mount("main", event=True)], [], inside).save == "branch:acme/widgets@main"
    push = {"payload": {"github": {"ref": "refs/heads/dev", "repository": {"fullName": REPO}}}}
    assert plan_scopes([_mount("refs/heads/dev", event=True)], [], push).save == (
        "branch:acme/widgets@dev"
    )
    # a ref from a comment, outside any pull request: its own scope, no base
    comment = {"payload": {"github": {"event": "issue_comment", "issue": {"number": 5}}}}
    plan = plan_scopes([_mount("v1.2", event=True)], [], comment)
    assert (plan.save, plan.pull_request_code) == ("ref:acme/widgets@v1.2", True)
    assert [c.scope for c in plan.restore] == ["ref:acme/widgets@v1.2"]


def test_a_written_pull_request_ref_is_pull_request_code_whatever_the_event() -> None:
    # another pull request than the event's: its own scope, and no base branch known
    plan = plan_scopes([_mount("pull/7/merge")], [], _pull_event())
    assert plan.save == "pull:acme/widgets#7"
    assert [c.scope for c in plan.restore] == ["pull:acme/widgets#7"]
    # a comment on a pull request names it, not its base
    comment = {
        "payload": {
            "github": {
                "issue": {"number": 2, "pullRequest": {"url": "x"}},
                "repository": {"fullName": REPO},
            }
        }
    }
    plan = plan_scopes([_mount("f" * 40, event=True)], [], comment)
    assert plan.save == "pull:acme/widgets#2"
    assert [c.scope for c in plan.restore] == ["pull:acme/widgets#2"]


def test_one_pull_request_mount_makes_the_session_pull_request_code() -> None:
    tools = _mount("main").model_copy(
        update={"repository": "acme/tools", "mount_path": "/workspace/tools"}
    )
    plan = plan_scopes([tools, _mount("refs/pull/2/head")], [], _pull_event())
    assert plan.save == "pull:acme/widgets#2"
    assert plan.restore[-1] == Candidate(
        "branch:acme/tools@main, acme/widgets@main", ("main", "main")
    )
    assert plan_scopes([], [], None).save == "unmounted"


def test_a_privileged_session_never_restores_what_pull_request_code_saved() -> None:
    branch = plan_scopes([_mount("main", contents="write")], [], None)
    (own,) = branch.restore
    assert may_restore(branch, own, {"scope": own.scope, "pullRequestCode": False})
    assert not may_restore(branch, own, {"scope": own.scope, "pullRequestCode": True})
    assert not may_restore(branch, own, {"scope": own.scope})  # unmarked: never trusted
    assert not may_restore(branch, own, {"scope": "pull:acme/widgets#2", "pullRequestCode": False})
    reader = plan_scopes([_mount("refs/pull/2/head")], [], _pull_event())
    pull, base = reader.restore
    assert may_restore(reader, pull, {"scope": pull.scope, "pullRequestCode": True})
    assert may_restore(reader, base, {"scope": base.scope, "pullRequestCode": False})
    # a scope the session may not read, whatever the record says
    dev = Candidate("branch:acme/widgets@dev", ("dev",))
    assert not may_restore(reader, dev, {"scope": dev.scope, "pullRequestCode": False})


def test_privileges_name_what_makes_a_session_privileged() -> None:
    none_auth = _mount("main", contents="write").model_copy(update={"auth": "none"})
    assert privileges([none_auth], [{"A": "literal"}]) == []
    assert privileges(
        [_mount("main", secrets="read", merge="none")], [{"S": SecretRef(secret="s")}]
    ) == [
        "/workspace/widgets secrets: read",
        "env S: $secret",
    ]


def test_a_snapshot_saved_with_a_secret_goes_only_to_sessions_given_it() -> None:
    writer = plan_scopes([_mount("main")], [{"TOKEN": SecretRef(secret="npm")}], None)
    assert writer.secrets == ("npm",)
    pull = plan_scopes([_mount("refs/pull/2/head")], [{}], _pull_event())
    base = pull.restore[-1]
    saved = {"scope": base.scope, "pullRequestCode": False}
    assert may_restore(pull, base, saved)
    assert not may_restore(pull, base, {**saved, "secrets": ["npm"]})
    (own,) = writer.restore
    assert may_restore(
        writer, own, {"scope": own.scope, "pullRequestCode": False, "secrets": ["npm"]}
    )
    assert not may_restore(
        writer, own, {"scope": own.scope, "pullRequestCode": False, "secrets": "npm"}
    )
