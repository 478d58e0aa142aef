"""The pure rules: the tool table, tool visibility and gates, and which mount git asks about."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.github_tools import (
    METHODS,
    TOOLS,
    UNGRANTABLE_METHODS,
    UNMOUNTED,
    tool_token_permissions,
)
from agents.model import Capabilities
from tests.conftest import session_spec
from triggers.session.access import (
    AccessDenied,
    AccessNotFound,
    AccessRefused,
    find_git_mount,
    git_permissions,
    session_mounts,
    session_tools,
    tool_grant,
)
from triggers.session.spec import SessionSpec
from triggers.session.url_rewrite import parse_rewrites


def _spec(*mounts: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> SessionSpec:
    return session_spec(
        "hs-rules",
        agent="rules",
        origin="manual",
        mounts=[{"ref": None, "depth": 1, **mount} for mount in mounts],
        tools=tools or [],
    )


def _mount(repository: str = "acme/widgets", **capabilities: str) -> dict[str, Any]:
    return {
        "repository": repository,
        "url": f"https://github.com/{repository}.git",
        "mountPath": f"/workspace/{repository.split('/')[1]}",
        "auth": "githubApp",
        "capabilities": capabilities,
        "installationId": 7,
    }


def test_the_table_covers_every_family_and_the_seed_gates() -> None:
    families = {need.family for need in TOOLS.values()}
    assert families == {
        "contents",
        "pull requests",
        "issues",
        "checks",
        "actions",
        "secrets",
        "merge",
    }
    assert TOOLS["merge_pull_request"].capability == "merge"
    assert TOOLS["enable_pull_request_auto_merge"].level == "write"
    assert (TOOLS["actions_secret_list"].capability, TOOLS["actions_secret_list"].level) == (
        "secrets",
        "read",
    )
    # secrets are written through GitHub only encrypted to the repository's key (libsodium),
    # which hookspawn does not do: no tool writes them
    assert "actions_secret_write" not in TOOLS
    # actions: write adds the selected reruns alone; starting, cancelling and deleting logs
    # are no tool, and no method any capability grants
    writes = {name for name, need in TOOLS.items() if need.capability == "actions"}
    writes = {name for name in writes if TOOLS[name].level == "write"}
    assert writes == {
        "actions_run_trigger",
        "rerun_failed_jobs",
        "rerun_failed_jobs_for_pr_head",
        "rerun_workflow_run",
    }
    assert set(METHODS["actions_run_trigger"]) == {"rerun_workflow_run", "rerun_failed_jobs"}
    assert {"run_workflow", "cancel_workflow_run", "delete_workflow_run_logs"} == set(
        UNGRANTABLE_METHODS
    )
    assert UNMOUNTED.merge == "none" and UNMOUNTED.secrets == "none"
    for name, need in TOOLS.items():
        permissions = tool_token_permissions(need)
        assert permissions["metadata"] == "read", name
        assert "workflows" not in permissions, name


def test_visibility_and_per_call_gate() -> None:
    spec = _spec(_mount(contents="read"), _mount("acme/gadgets", merge="write"))
    visible = session_tools(spec)
    assert "merge_pull_request" in visible and "create_or_update_file" in visible
    # visible (the gadgets mount grants it) but re-checked against widgets' own mount
    with pytest.raises(AccessRefused) as refused:
        tool_grant(spec, "create_or_update_file", "acme/widgets")
    assert (type(refused.value), refused.value.code) == (AccessDenied, "tool_not_granted")
    with pytest.raises(AccessRefused) as refused:
        tool_grant(spec, "merge_pull_request", "acme/widgets")
    assert refused.value.code == "tool_not_granted"
    assert tool_grant(spec, "merge_pull_request", "ACME/Gadgets").mount is not None
    unmounted = tool_grant(spec, "create_or_update_file", "acme/other")
    assert unmounted.mount is None
    assert unmounted.permissions == {"contents": "write", "metadata": "read"}
    with pytest.raises(AccessRefused) as refused:
        tool_grant(spec, "merge_pull_request", "acme/other")
    assert refused.value.code == "tool_not_granted"
    with pytest.raises(AccessRefused) as refused:
        tool_grant(spec, "no_such_tool", "acme/widgets")
    assert (type(refused.value), refused.value.code) == (AccessNotFound, "unknown_tool")


def test_no_tools_without_a_github_app_mount_and_allowlist_narrows() -> None:
    public = dict(_mount(), auth="none")
    assert session_tools(_spec(public)) == []
    narrowed = _spec(_mount(), tools=[{"kind": "github", "allow": ["get_issue", "nope"]}])
    assert session_tools(narrowed) == ["get_issue"]
    # a tool the allowlist names but no mount grants stays invisible and uncallable (the
    # compiler only warns about it)
    named = _spec(
        _mount(), tools=[{"kind": "github", "allow": ["get_issue", "merge_pull_request"]}]
    )
    assert session_tools(named) == ["get_issue"]
    with pytest.raises(AccessRefused) as refused:
        tool_grant(named, "merge_pull_request", "acme/widgets")
    assert refused.value.code == "tool_not_granted"


def test_git_mount_by_url_needs_the_host_it_is_fetched_from() -> None:
    mounts = session_mounts(_spec(_mount(), _mount("acme/gadgets")))
    found = find_git_mount(
        mounts, mount_path=None, protocol="https", host="github.com", path="Acme/Gadgets.git"
    )
    assert found.repository == "acme/gadgets"
    rewrites = parse_rewrites(["https://github.com/=http://127.0.0.1:9/git/"])
    local = find_git_mount(
        mounts,
        mount_path=None,
        protocol="http",
        host="127.0.0.1:9",
        path="git/acme/widgets.git",
        rewrites=rewrites,
    )
    assert local.repository == "acme/widgets"
    for host, path in (("evil.example", "acme/widgets.git"), ("github.com", "acme/other.git")):
        with pytest.raises(AccessRefused) as refused:
            find_git_mount(mounts, mount_path=None, protocol="https", host=host, path=path)
        assert (type(refused.value), refused.value.code) == (AccessNotFound, "mount_not_found")
    assert find_git_mount(
        mounts, mount_path="/workspace/gadgets/", protocol=None, host=None, path=None
    ).repository == ("acme/gadgets")


def test_capabilities_round_trip() -> None:
    caps = Capabilities(contents="read", merge="write", secrets="read")
    from agents.github_tools import capabilities_from_json

    assert capabilities_from_json(caps.to_json()) == caps
    assert capabilities_from_json(None) == Capabilities()


def test_the_rules_are_pure() -> None:
    code = (
        "import sys, triggers.session.access, agents.github_tools; "
        "print(sorted(m for m in ('redis', 'celery', 'githubkit', 'httpx') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_readme_lists_exactly_the_table() -> None:
    readme = (Path(__file__).resolve().parents[4] / "docs" / "runner-and-sandbox.md").read_text()
    section = readme.split("\n## What a session may do on GitHub\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    listed: dict[str, str] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) == 3 and cells[1].startswith("`") and ":" in cells[1]:
            for name in re.findall(r"`([a-z_]+)`", cells[2]):
                listed[name] = cells[1].strip("`")
    assert listed == {name: need.text for name, need in TOOLS.items()}


def test_the_git_credential_scope_is_the_one_the_spec_was_spawned_with() -> None:
    # the stored gitPermissions is the one source: the capabilities are not read again
    stored = {"contents": "read", "metadata": "read"}
    spec = _spec(_mount(contents="write"), _mount("acme/gadgets", contents="write"))
    spawned = spec.model_copy(
        update={
            "mounts": [
                spec.mounts[0].model_copy(update={"git_permissions": stored}),
                spec.mounts[1],  # spawned without a git credential
            ]
        }
    )
    widgets, gadgets = session_mounts(spawned)
    assert git_permissions(widgets) == stored
    with pytest.raises(AccessRefused) as refused:
        git_permissions(gadgets)
    assert refused.value.code == "no_git_credential"
    assert "/workspace/gadgets" in refused.value.message
